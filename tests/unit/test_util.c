/*
 * test_util.c - the shared helpers (core/util.c): size parsing, zlib
 * inflation with its exact error messages, growable buffers, errors,
 * options, and the I/O helpers.
 */
#include "savefs.h"
#include "t.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static void parse_size(void)
{
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {
		{"0", 0},
		{"4096", 4096},
		{"512K", 512ull << 10},
		{"512k", 512ull << 10},
		{"64M", 64ull << 20},
		{"1G", 1ull << 30},
		{"2T", 2ull << 40},
		{"1MiB", 1ull << 20},
		{"1MB", 1ull << 20},
		{"3Gi", 3ull << 30},
		{"18446744073709551615", UINT64_MAX},
		{"17179869183G", 17179869183ull << 30},
	};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		uint64_t v = 12345;
		int rc = sv_parse_size(good[i].s, &v);
		if (rc)
			fprintf(stderr, "  (parsing \"%s\")\n", good[i].s);
		T_INT(0, rc);
		T_UINT(good[i].v, v);
	}
	static const char *const bad[] = {
		"", "-1", "12Q", "M", "K1", "1.5M", "64M ", "1iB", "1B", "1MiBx",
		"18446744073709551616",       /* past UINT64_MAX */
		"99999999999999999999999",    /* far past */
		"17179869184G",               /* 2^64 once shifted */
		"16777216T",                  /* 2^64 once shifted */
		" -1", "\t-5M",               /* a minus sign after blanks */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		uint64_t v = 777;
		int rc = sv_parse_size(bad[i], &v);
		if (rc != -EINVAL)
			fprintf(stderr, "  (parsing \"%s\" gave %llu)\n", bad[i],
				(unsigned long long)v);
		T_INT(-EINVAL, rc);
		T_UINT(777, v); /* untouched on failure */
	}
	uint64_t v = 0;
	T_INT(-EINVAL, sv_parse_size(NULL, &v));
}

/* ---- sv_inflate -------------------------------------------------------- */

static uint8_t *compress_it(const uint8_t *p, size_t n, size_t *zn)
{
	uLongf bound = compressBound((uLong)n);
	uint8_t *z = malloc(bound);
	if (!z || compress2(z, &bound, p, (uLong)n, 6) != Z_OK) {
		fprintf(stderr, "compress2 failed\n");
		exit(1);
	}
	*zn = bound;
	return z;
}

static void inflate_ok(void)
{
	enum { N = 10000 };
	uint8_t *src = malloc(N), *dst = malloc(N + 16);
	for (size_t i = 0; i < N; i++)
		src[i] = (uint8_t)((i * 7) ^ (i >> 5));
	size_t zn;
	uint8_t *z = compress_it(src, N, &zn);
	struct sv_err e;
	sv_err_clear(&e);
	T_INT(0, sv_inflate(z, zn, dst, N, &e));
	T_MEM(src, dst, N);
	T_STR("", e.msg);
	T_INT(0, sv_inflate(z, zn, dst, N, NULL));

	/* An empty payload round-trips too. */
	size_t en;
	uint8_t *ez = compress_it((const uint8_t *)"", 0, &en);
	T_INT(0, sv_inflate(ez, en, dst, 0, &e));
	free(ez);
	free(z);
	free(src);
	free(dst);
}

static void inflate_sizes(void)
{
	enum { N = 5000 };
	uint8_t *src = malloc(N), *dst = malloc(2 * N);
	for (size_t i = 0; i < N; i++)
		src[i] = (uint8_t)(i % 251);
	size_t zn;
	uint8_t *z = compress_it(src, N, &zn);
	struct sv_err e;
	char want[200];

	/* Declared smaller than the stream: it would overrun. */
	static const size_t smaller[] = {N - 1, N / 2, 1, 0};
	for (size_t k = 0; k < sizeof smaller / sizeof *smaller; k++) {
		sv_err_clear(&e);
		T_INT(-EBADMSG, sv_inflate(z, zn, dst, smaller[k], &e));
		T_INT(-EBADMSG, e.code);
		snprintf(want, sizeof want, "inflates past its declared size of %zu bytes",
			 smaller[k]);
		T_STR(want, e.msg);
	}

	/* Declared larger: the stream ends first. */
	static const size_t larger[] = {N + 1, 2 * N};
	for (size_t k = 0; k < sizeof larger / sizeof *larger; k++) {
		sv_err_clear(&e);
		T_INT(-EBADMSG, sv_inflate(z, zn, dst, larger[k], &e));
		snprintf(want, sizeof want, "inflates to %d bytes, not the declared %zu", N,
			 larger[k]);
		T_STR(want, e.msg);
	}
	free(z);
	free(src);
	free(dst);
}

static void inflate_bad(void)
{
	enum { N = 5000 };
	uint8_t *src = malloc(N), *dst = malloc(N);
	for (size_t i = 0; i < N; i++)
		src[i] = (uint8_t)(i * i >> 3);
	size_t zn;
	uint8_t *z = compress_it(src, N, &zn);
	struct sv_err e;

	/* Not zlib at all. */
	static const struct {
		const char *p;
		size_t n;
	} notz[] = {
		{"", 0},
		{"\x78", 1},               /* too short for a header */
		{"hello, world", 12},      /* method is not deflate */
		{"\x1f\x8b\x08\x00", 4},   /* gzip, not zlib */
		{"\x78\x9d\x00\x00", 4},   /* header check fails */
		{"\x88\x98\x00\x00", 4},   /* window size 2^16: CINFO 8 */
	};
	for (size_t k = 0; k < sizeof notz / sizeof *notz; k++) {
		sv_err_clear(&e);
		T_INT(-EBADMSG, sv_inflate((const uint8_t *)notz[k].p, notz[k].n, dst, N, &e));
		T_STR("not a zlib stream", e.msg);
	}

	/* Truncated: the stream stops before its end. */
	sv_err_clear(&e);
	T_INT(-EBADMSG, sv_inflate(z, zn / 2, dst, N, &e));
	T_HAS(e.msg, "zlib stream ends early after ");
	char tail[64];
	snprintf(tail, sizeof tail, " of %d bytes", N);
	T_HAS(e.msg, tail);
	/* Only the header left. */
	sv_err_clear(&e);
	T_INT(-EBADMSG, sv_inflate(z, 2, dst, N, &e));
	char exact[100];
	snprintf(exact, sizeof exact, "zlib stream ends early after 0 of %d bytes", N);
	T_STR(exact, e.msg);

	/* Corrupt: a wrong checksum, an invalid block type, a dictionary. */
	uint8_t *c = malloc(zn);
	memcpy(c, z, zn);
	c[zn - 1] ^= 0x55;
	sv_err_clear(&e);
	T_INT(-EBADMSG, sv_inflate(c, zn, dst, N, &e));
	T_STR("corrupt zlib stream (incorrect data check)", e.msg);
	static const uint8_t badblock[] = {0x78, 0x9c, 0x07, 0x00, 0x00, 0x00};
	sv_err_clear(&e);
	T_INT(-EBADMSG, sv_inflate(badblock, sizeof badblock, dst, N, &e));
	T_STR("corrupt zlib stream (invalid block type)", e.msg);
	static const uint8_t dict[] = {0x78, 0x20, 0x00, 0x00, 0x00, 0x01, 0x03, 0x00};
	sv_err_clear(&e);
	T_INT(-EBADMSG, sv_inflate(dict, sizeof dict, dst, N, &e));
	T_HAS(e.msg, "corrupt zlib stream (");
	/* Garbage in the middle of the deflate data never crashes and never
	 * succeeds with the original bytes' checksum. */
	int ok = 0;
	for (size_t i = 2; i < zn - 4; i += 7) {
		memcpy(c, z, zn);
		c[i] ^= 0xa5;
		sv_err_clear(&e);
		int rc = sv_inflate(c, zn, dst, N, &e);
		ok += rc == 0;
		if (rc && rc != -EBADMSG)
			T_INT(-EBADMSG, rc);
	}
	T_INT(0, ok);
	free(c);
	free(z);
	free(src);
	free(dst);
}

/* ---- sv_buf, errors, options ------------------------------------------- */

static void bufs(void)
{
	struct sv_buf b;
	sv_buf_init(&b);
	T_OK(b.p == NULL);
	T_UINT(0, b.len);
	T_INT(0, sv_buf_add(&b, "abc", 3));
	T_INT(0, sv_buf_add(&b, NULL, 0));
	T_INT(0, sv_buf_printf(&b, "-%d-%s", 42, "x"));
	T_UINT(8, b.len);
	T_MEM("abc-42-x", b.p, 8);
	/* printf keeps a NUL after the text, outside len. */
	T_OK(b.cap > b.len && b.p[b.len] == '\0');
	T_INT(0, sv_buf_printf(&b, "%s", ""));
	T_UINT(8, b.len);
	/* Growth keeps the content. */
	for (int i = 0; i < 1000; i++)
		T_INT(0, sv_buf_add(&b, "0123456789", 10));
	T_UINT(10008, b.len);
	T_OK(b.cap >= b.len);
	T_MEM("abc-42-x0123456789", b.p, 18);
	T_MEM("0123456789", b.p + b.len - 10, 10);
	size_t cap = b.cap;
	T_INT(0, sv_buf_reserve(&b, 0));
	T_UINT(cap, b.cap);
	/* A size that wraps around is refused, not allocated. */
	T_INT(-ENOMEM, sv_buf_reserve(&b, SIZE_MAX));
	T_INT(-ENOMEM, sv_buf_reserve(&b, SIZE_MAX - b.len + 1));
	T_INT(-ENOMEM, sv_buf_add(&b, "x", SIZE_MAX));
	T_UINT(10008, b.len);
	sv_buf_fini(&b);
	T_OK(b.p == NULL);
	T_UINT(0, b.len);
	T_UINT(0, b.cap);
	sv_buf_fini(&b);
	sv_buf_fini(NULL);
}

static void errs(void)
{
	struct sv_err e;
	T_INT(-EBADMSG, sv_err_set(&e, -EBADMSG, "item %d at offset %llu", 7, 99ull));
	T_INT(-EBADMSG, e.code);
	T_STR("item 7 at offset 99", e.msg);
	sv_err_clear(&e);
	T_INT(0, e.code);
	T_STR("", e.msg);
	T_INT(-EIO, sv_err_set(NULL, -EIO, "nobody listens"));
	sv_err_clear(NULL);
	/* A long reason is cut, never overrun. */
	char big[1000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	sv_err_set(&e, -EINVAL, "%s", big);
	T_UINT(SV_ERR_MAX - 1, strlen(e.msg));
}

static void opts(void)
{
	struct sv_opts o;
	memset(&o, 0xab, sizeof o);
	sv_opts_init(&o);
	T_UINT(SV_DEFAULT_CACHE, o.cache_cap);
	T_UINT(SV_DEFAULT_MAX_DECODE, o.max_decode);
	T_UINT(SV_DEFAULT_MAX_EDIT, o.max_edit);
	T_OK(o.format == NULL);
	T_OK(!o.read_only);
	T_UINT(64ull << 20, o.cache_cap);
}

static void io(void)
{
	char path[] = "/tmp/savefs-test-util-XXXXXX";
	int fd = mkstemp(path);
	T_OK(fd >= 0);
	if (fd < 0)
		return;
	unlink(path);
	enum { N = 3 << 20 }; /* more than sv_copy_range's 1 MiB chunk */
	uint8_t *p = malloc(N), *q = malloc(N);
	for (size_t i = 0; i < N; i++)
		p[i] = (uint8_t)(i * 13 + (i >> 12));
	T_INT(0, sv_write_all(fd, p, N));
	T_INT(0, sv_write_all(fd, p, 0));
	char path2[] = "/tmp/savefs-test-util-XXXXXX";
	int out = mkstemp(path2);
	unlink(path2);
	T_INT(0, sv_copy_range(fd, 1, out, N - 2));
	T_INT(0, sv_copy_range(fd, 5, out, 0));
	T_INT((off_t)N - 2, lseek(out, 0, SEEK_CUR));
	T_INT(N - 2, pread(out, q, N, 0));
	T_MEM(p + 1, q, N - 2);
	/* Past the end of the input: the host's short read is an error. */
	T_INT(-EIO, sv_copy_range(fd, N - 10, out, 20));
	T_INT(-EBADF, sv_write_all(-1, p, 1));
	T_OK(sv_copy_range(-1, 0, out, 1) < 0);
	close(out);
	close(fd);
	free(p);
	free(q);
}

/* JSON views write each real as its shortest decimal, and a tree holding
 * the marker character in a string is written by jansson alone. */
static void json_reals(void)
{
	json_t *o = json_pack("{s:f,s:f,s:[f,f,f],s:{s:f},s:i,s:s}", "a", 250.216927267, "b", 64.0,
			      "c", 0.1, 1e300, -2.5e-7, "d", "e", 1e16, "i", 3, "s", "x");
	struct sv_buf b;
	sv_buf_init(&b);
	T_INT(0, sv_json_dump(o, JSON_COMPACT | JSON_PRESERVE_ORDER, &b));
	sv_buf_add(&b, "", 1);
	T_STR("{\"a\":250.216927267,\"b\":64.0,\"c\":[0.1,1e+300,-2.5e-07],\"d\":{\"e\":1e+16},"
	      "\"i\":3,\"s\":\"x\"}", (char *)b.p);
	/* Read back: the same values, reals still reals. */
	json_t *back = json_loads((char *)b.p, 0, NULL);
	T_OK(back && json_equal(o, back));
	T_OK(json_is_real(json_object_get(back, "b")));
	json_decref(back);
	sv_buf_fini(&b);
	json_object_set_new(o, "s", json_string("\x01" "1\x01"));
	sv_buf_init(&b);
	T_INT(0, sv_json_dump(o, JSON_COMPACT | JSON_PRESERVE_ORDER, &b));
	sv_buf_add(&b, "", 1);
	T_OK(strstr((char *)b.p, "\"s\":\"\\u00011\\u0001\"") != NULL);
	T_OK(strstr((char *)b.p, "250.21692726699999") != NULL);
	sv_buf_fini(&b);
	json_decref(o);
}

static bool int_below(const void *arg, size_t i)
{
	static const int v[] = {1, 3, 3, 3, 7, 9};
	return v[i] < *(const int *)arg;
}

/* sv_lower_bound: the first entry not below what is sought. */
static void lower_bound(void)
{
	static const struct {
		int want;
		size_t at;
	} cases[] = {{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 4}, {7, 4}, {8, 5}, {9, 5}, {10, 6}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
		T_UINT(cases[k].at, sv_lower_bound(6, int_below, &cases[k].want));
	int any = 5;
	T_UINT(0, sv_lower_bound(0, int_below, &any));
	T_UINT(2, sv_lower_bound(2, int_below, &any)); /* the first two only */
}

/* sv_nl: every newline of a buffer, in order, as memchr finds them: at
 * every length up to 300 (windows of 64 and the tail), from an odd start,
 * with newlines dense, sparse, at window edges and none. */
static void newlines(void)
{
	static uint8_t buf[320];
	int bad = 0;
	for (int pattern = 0; pattern < 5; pattern++) {
		for (size_t i = 0; i < sizeof buf; i++) {
			bool nl = pattern == 0 ? i % 2 == 0
				: pattern == 1 ? i % 63 == 0
				: pattern == 2 ? i % 64 == 63 || i % 64 == 0
				: pattern == 3 ? false
				: (i * 2654435761u) % 7 == 0;
			buf[i] = nl ? '\n' : (uint8_t)('a' + i % 26);
		}
		for (size_t from = 0; from < 3; from++)
			for (size_t len = 0; from + len <= sizeof buf && len <= 300; len++) {
				const uint8_t *p = buf + from, *e = p + len, *want = p;
				struct sv_nl f;
				sv_nl_start(&f, p, e);
				for (;;) {
					want = want < e ? memchr(want, '\n', (size_t)(e - want)) : NULL;
					const uint8_t *got = sv_nl_next(&f);
					if (got != want) {
						bad++;
						break;
					}
					if (!got)
						break;
					want++;
				}
			}
	}
	T_INT(0, bad);
	uint8_t none[1] = {'x'};
	struct sv_nl f;
	sv_nl_start(&f, none, none);
	T_OK(sv_nl_next(&f) == NULL);
}

/* sv_u64set: what was added is in it once sorted, 0 never is; cleared,
 * nothing is; `all` holds everything. */
static void u64set(void)
{
	struct sv_u64set s = {0};
	static const uint64_t in[] = {900, 3, 0, 77, 3, 1ull << 63, 12};
	for (size_t i = 0; i < sizeof in / sizeof *in; i++)
		sv_u64set_add(&s, in[i]);
	for (uint64_t x = 0; x < 40; x++)
		sv_u64set_add(&s, 1000 + x); /* past the first growth */
	sv_u64set_sort(&s);
	T_UINT(46, s.n);
	T_OK(sv_u64set_has(&s, 3) && sv_u64set_has(&s, 900) && sv_u64set_has(&s, 1ull << 63));
	T_OK(sv_u64set_has(&s, 1000) && sv_u64set_has(&s, 1039));
	T_OK(!sv_u64set_has(&s, 0) && !sv_u64set_has(&s, 4) && !sv_u64set_has(&s, 1040));
	sv_u64set_clear(&s);
	T_OK(!sv_u64set_has(&s, 3));
	s.all = true;
	T_OK(sv_u64set_has(&s, 5) && sv_u64set_has(&s, 0));
	sv_u64set_add(&s, 8);
	T_UINT(0, s.n);
	sv_u64set_fini(&s);
	T_OK(!s.v && !s.n && !s.all);
}

/* A field of /proc/self/status, in kB (-1 if missing). */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static size_t open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	size_t n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* Whether p[0..n) holds the pattern written at from. */
static bool pattern_ok(const uint32_t *p, size_t from, size_t n)
{
	for (size_t i = from; i < n; i++)
		if (p[i] != (uint32_t)(i * 2654435761u))
			return false;
	return true;
}

/*
 * Arrays that leave the heap (tab.c): one that grows past the threshold
 * moves into an unlinked file with its content; it grows on in the file;
 * after a shed the daemon's memory no longer holds its pages (RssFile
 * falls by its size) and the content reads back; freed, the file goes.
 * With no directory to spill to, or a file that cannot grow (a file size
 * limit: EFBIG), it stays on the heap, or stays as it was.
 */
static void tabs(void)
{
	char dir[] = "/tmp/test_tab.XXXXXX";
	T_OK(mkdtemp(dir) != NULL);
	sv_tab_configure(dir, 64 << 10, 0); /* sheds counted below */
	struct sv_tab_stats st;
	uint32_t *a = NULL;
	size_t cap = 0;
	/* A first spill opens /proc/self/statm, kept open: counted before. */
	T_INT(0, sv_tab_grow((void **)&a, &cap, 1u << 20, sizeof *a));
	sv_tab_free(a);
	a = NULL;
	cap = 0;
	size_t fds = open_fds();
	T_INT(0, sv_tab_grow((void **)&a, &cap, 1000, sizeof *a)); /* 4 KB: heap */
	for (size_t i = 0; i < 1000; i++)
		a[i] = (uint32_t)(i * 2654435761u);
	sv_tab_stats(&st);
	T_UINT(0, st.arrays);
	T_INT(0, sv_tab_grow((void **)&a, &cap, 4u << 20, sizeof *a)); /* 16 MB: a file */
	sv_tab_stats(&st);
	T_UINT(1, st.arrays);
	T_UINT(16u << 20, st.bytes);
	T_UINT(fds + 1, open_fds());
	T_OK(pattern_ok(a, 0, 1000));
	for (size_t i = 1000; i < cap; i++)
		a[i] = (uint32_t)(i * 2654435761u);
	long held = status_kb("RssFile");
	sv_tab_shed();
	long shed = status_kb("RssFile");
	T_OK(held - shed >= 15 * 1024); /* its 16 MB were held, and are not */
	T_OK(pattern_ok(a, 0, cap));
	T_INT(0, sv_tab_grow((void **)&a, &cap, 8u << 20, sizeof *a)); /* grows in the file */
	T_UINT(8u << 20, cap);
	T_OK(pattern_ok(a, 0, 4u << 20));
	T_UINT(0, a[(8u << 20) - 1]);
	/* Counted entries look at what the daemon holds every
	 * SV_TAB_LOOK_EVERY: nothing is shed while the array's pages are
	 * not held; with its 32 MB touched (past the window, 16 x 64 KB),
	 * they are. */
	sv_tab_shed();
	sv_tab_stats(&st);
	uint64_t sheds = st.sheds;
	for (unsigned i = 0; i < 4 * SV_TAB_LOOK_EVERY; i++)
		sv_tab_note(1);
	sv_tab_stats(&st);
	T_UINT(sheds, st.sheds);
	for (size_t i = 0; i < cap; i += 1024)
		a[i] = 1;
	T_OK(status_kb("RssFile") >= 32 * 1024);
	for (unsigned i = 0; i < SV_TAB_LOOK_EVERY; i++)
		sv_tab_note(1);
	sv_tab_stats(&st);
	T_UINT(sheds + 1, st.sheds);
	T_OK(status_kb("RssFile") < 8 * 1024);
	/* A note of many at once looks at once. */
	for (size_t i = 0; i < cap; i += 1024)
		a[i] = 2;
	sv_tab_note(SV_TAB_LOOK_EVERY);
	sv_tab_stats(&st);
	T_UINT(sheds + 2, st.sheds);
	T_UINT(2, a[cap - 1024]);
	sv_tab_free(a);
	sv_tab_stats(&st);
	T_UINT(0, st.arrays);
	T_UINT(0, st.bytes);
	T_UINT(fds, open_fds());

	/* Zeroed, on the heap and in a file. */
	uint8_t *z = NULL;
	T_INT(0, sv_tab_alloc((void **)&z, &cap, 100, 1));
	T_OK(cap >= 100 && !z[0] && !z[99]);
	sv_tab_free(z);
	T_INT(0, sv_tab_alloc((void **)&z, &cap, 1u << 20, 1));
	sv_tab_stats(&st);
	T_UINT(1, st.arrays);
	T_OK(!z[0] && !z[(1u << 20) - 1]);
	sv_tab_free(z);

	/* A file size limit: a new spill fails (EFBIG), the array goes on
	 * on the heap; a spilled one that cannot grow stays as it was. */
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 1u << 20;
	signal(SIGXFSZ, SIG_IGN);
	a = NULL;
	cap = 0;
	T_INT(0, sv_tab_grow((void **)&a, &cap, 1u << 18, sizeof *a)); /* 1 MB */
	sv_tab_stats(&st);
	T_UINT(1, st.arrays);
	for (size_t i = 0; i < cap; i++)
		a[i] = (uint32_t)(i * 2654435761u);
	T_INT(0, setrlimit(RLIMIT_FSIZE, &lim));
	T_INT(-EFBIG, sv_tab_grow((void **)&a, &cap, 1u << 19, sizeof *a));
	T_UINT(1u << 18, cap);
	T_OK(pattern_ok(a, 0, cap));
	sv_tab_free(a);
	a = NULL;
	cap = 0;
	T_INT(0, sv_tab_grow((void **)&a, &cap, 1u << 19, sizeof *a)); /* 2 MB on the heap */
	sv_tab_stats(&st);
	T_UINT(0, st.arrays);
	a[(1u << 19) - 1] = 7;
	sv_tab_free(a);
	T_INT(0, setrlimit(RLIMIT_FSIZE, &old));

	/* No directory: the heap. */
	sv_tab_configure("", 64 << 10, 0);
	a = NULL;
	cap = 0;
	T_INT(0, sv_tab_grow((void **)&a, &cap, 1u << 20, sizeof *a));
	sv_tab_stats(&st);
	T_UINT(0, st.arrays);
	sv_tab_free(a);
	sv_tab_configure(NULL, SV_TAB_SPILL, 0);
	T_INT(0, rmdir(dir)); /* nothing left in it */
}

/* What a process holds of mapped file pages, at most, right after a known
 * point: its libraries' pages (measured before any array is in a file:
 * 4.6 MB under the sanitizers), the window (16 thresholds of 64 KB: 1 MB),
 * one step past it (64 KB), and the kernel's fault-around. */
static long held_kb;
#define HELD_KB (held_kb + (long)(SV_TAB_WINDOW * 64) + 512)

/* Touches every page of a (cap elements). */
static void touch_all(uint32_t *a, size_t cap, uint32_t v)
{
	for (size_t i = 0; i < cap; i += 1024)
		a[i] = v;
}

/*
 * The window is what the daemon's cache cap allows (an eighth of it,
 * between 4 and 16 thresholds), and a window configured smaller holds
 * the process to it at every point of a pass, not only at its end.
 */
static void tab_window(void)
{
	T_UINT(8u << 20, sv_tab_window_for(64ull << 20, SV_TAB_SPILL));
	T_UINT(16u << 20, sv_tab_window_for(1ull << 30, SV_TAB_SPILL));
	T_UINT(4u << 20, sv_tab_window_for(1ull << 20, SV_TAB_SPILL));
	T_UINT(256u << 10, sv_tab_window_for(2ull << 20, 64 << 10));
	char dir[] = "/tmp/test_tabv.XXXXXX";
	T_OK(mkdtemp(dir) != NULL);
	sv_tab_configure(dir, 64 << 10, 1 << 20); /* at least 4 thresholds: 256 KB */
	sv_tab_shed();
	long base = status_kb("RssFile"), most = 0;
	uint32_t *a = NULL;
	size_t cap = 0;
	T_INT(0, sv_tab_grow((void **)&a, &cap, 4u << 20, sizeof *a)); /* 16 MB */
	for (size_t i = 0; i < cap; i++) {
		a[i] = (uint32_t)(i * 2654435761u);
		if (i % 4096 == 4095) {
			sv_tab_touch(4096 * sizeof *a);
			long now = status_kb("RssFile") - base;
			most = now > most ? now : most;
		}
	}
	/* The window, a step (16 KB) and the kernel's fault-around; 16
	 * thresholds (1 MB) would pass 1024 KB. */
	T_OK(most < 256 + 16 + 256);
	T_OK(most >= 256);
	T_OK(pattern_ok(a, 0, cap));
	sv_tab_free(a);
	sv_tab_configure(NULL, SV_TAB_SPILL, 0);
	T_INT(0, rmdir(dir));
}

/*
 * A record stored from an array in a file (a log's scan kept in the
 * persistent index) is written a piece at a time and counted as it goes:
 * storing 16 MB of it leaves the process holding the window, not the
 * array, and the record reads back whole.
 */
static void tab_store_record(void)
{
	char dir[] = "/tmp/test_tabs.XXXXXX";
	T_OK(mkdtemp(dir) != NULL);
	sv_tab_configure(dir, 64 << 10, 2 << 20); /* an eighth: 256 KB */
	uint32_t *a = NULL;
	size_t cap = 0;
	T_INT(0, sv_tab_grow((void **)&a, &cap, 4u << 20, sizeof *a)); /* 16 MB */
	for (size_t i = 0; i < cap; i++) {
		a[i] = (uint32_t)(i * 2654435761u);
		if (i % 4096 == 4095)
			sv_tab_touch(4096 * sizeof *a);
	}
	sv_tab_shed();
	long base = status_kb("RssFile");
	char cont[64], idx[64];
	snprintf(cont, sizeof cont, "%s/c", dir);
	snprintf(idx, sizeof idx, "%s/ix", dir);
	FILE *f = fopen(cont, "w");
	T_OK(f && fputs("a container", f) >= 0 && !fclose(f));
	struct sv_index_key k = {"test", 1, "scan", {0}};
	T_INT(0, stat(cont, &k.st));
	T_INT(0, sv_index_store(idx, &k, a, cap * sizeof *a, UINT64_MAX));
	/* Before, the whole array stayed mapped: 16,384 KB. */
	T_OK(status_kb("RssFile") - base < 256 + 256 + 256);
	/* Read back into a file of its own, a piece at a time, counted: not
	 * onto the heap whole (16,384 KB more anonymous memory before), and
	 * what the read touched is shed behind it. */
	struct sv_tab_stats st0, st;
	sv_tab_stats(&st0);
	sv_tab_shed();
	base = status_kb("RssFile");
	long anon = status_kb("RssAnon");
	struct sv_blob *b = NULL;
	T_INT(0, sv_index_load(idx, &k, 32u << 20, &b));
#ifndef __SANITIZE_THREAD__ /* (whose shadow of what the pass read is anonymous) */
	T_OK(status_kb("RssAnon") - anon < 1024);
#else
	(void)anon;
#endif
	T_OK(status_kb("RssFile") - base < 256 + 256 + 256);
	sv_tab_stats(&st);
	T_UINT(st0.arrays + 1, st.arrays);
	T_OK(b && b->len == cap * sizeof *a && !memcmp(b->data, a, b->len));
	sv_blob_unref(b);
	sv_tab_stats(&st);
	T_UINT(st0.arrays, st.arrays);
	/* A byte of it changed on the disk: refused by the hash taken in
	 * pieces, the record removed, its file array gone with it. */
	DIR *d = opendir(idx);
	struct dirent *e;
	char rec[sizeof idx + 40] = "";
	while (d && (e = readdir(d)))
		if (strlen(e->d_name) == 32)
			snprintf(rec, sizeof rec, "%s/%.32s", idx, e->d_name);
	if (d)
		closedir(d);
	int fd = open(rec, O_WRONLY);
	T_OK(fd >= 0);
	T_INT(1, pwrite(fd, "!", 1, SV_INDEX_HEAD + (8 << 20)));
	close(fd);
	b = NULL;
	T_INT(-EBADMSG, sv_index_load(idx, &k, 32u << 20, &b));
	T_OK(b == NULL);
	sv_tab_stats(&st);
	T_UINT(st0.arrays, st.arrays);
	T_INT(-1, access(rec, F_OK));
	sv_tab_free(a);
	sv_tab_configure(NULL, SV_TAB_SPILL, 0);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	T_INT(0, system(cmd));
}

/*
 * Pages are shed at known points, never by a clock: 32 MB of a spilled
 * array written in a pass that says what it touched (sv_tab_touch, as a
 * format's loop over its index does), and 32 MB appended an element at a
 * time (each sv_tab_grow counts), leave the process holding no more than
 * the window and a step past its libraries' pages, at once, the content
 * intact.  In a forked child, counted entries look at the child's own
 * figures (/proc/self opened again), not its parent's.
 */
static void tab_known_points(void)
{
	char dir[] = "/tmp/test_tabw.XXXXXX";
	T_OK(mkdtemp(dir) != NULL);
	sv_tab_configure(dir, 64 << 10, 0);
	sv_tab_shed();
	held_kb = status_kb("RssFile");
	uint32_t *a = NULL;
	size_t cap = 0;
	T_INT(0, sv_tab_grow((void **)&a, &cap, 8u << 20, sizeof *a)); /* 32 MB */
	struct sv_tab_stats st;
	sv_tab_stats(&st);
	uint64_t sheds = st.sheds;
	for (size_t i = 0; i < cap; i++) {
		a[i] = (uint32_t)(i * 2654435761u);
		if (i % 4096 == 4095)
			sv_tab_touch(4096 * sizeof *a);
	}
	T_OK(status_kb("RssFile") < HELD_KB);
	sv_tab_stats(&st);
	T_OK(st.sheds >= sheds + 16);
	T_OK(pattern_ok(a, 0, cap));

	/* Appended an element at a time. */
	sv_tab_shed();
	uint32_t *b = NULL;
	size_t capb = 0;
	for (uint32_t i = 0; i < (8u << 20); i++) {
		if (sv_tab_grow((void **)&b, &capb, i + 1, sizeof *b))
			break;
		b[i] = i * 3;
	}
	T_OK(status_kb("RssFile") < HELD_KB);
	T_UINT(3u * ((8u << 20) - 1), b[(8u << 20) - 1]);
	T_UINT(3u * 12345, b[12345]);
	sv_tab_free(b);

	sv_tab_shed(); /* the parent's own figure is small */
	pid_t pid = fork();
	if (pid == 0) {
		touch_all(a, cap, 5);
		sv_tab_note(SV_TAB_LOOK_EVERY);
		_exit(status_kb("RssFile") < 8 * 1024 && a[cap - 1024] == 5 ? 0 : 1);
	}
	int status = -1;
	T_INT(pid, waitpid(pid, &status, 0));
	T_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	sv_tab_free(a);
	sv_tab_configure(NULL, SV_TAB_SPILL, 0);
	T_INT(0, rmdir(dir));
}

struct sort_el {
	uint32_t key, id;
	char fill[64]; /* wider than the sort's swap buffer */
};

static int cmp_el(const void *a, const void *b)
{
	const struct sort_el *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* McIlroy's adversary ("A killer adversary for quicksort", 1999): values
 * are settled only as comparisons need them, always against the pivot's
 * side, so any quicksort partitions badly at every step. */
static uint32_t *adv_val, adv_gas, adv_solid, adv_candidate;
static uint64_t adv_cmps;

static int cmp_adv(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	adv_cmps++;
	if (adv_val[x] == adv_gas && adv_val[y] == adv_gas)
		adv_val[x == adv_candidate ? x : y] = adv_solid++;
	if (adv_val[x] == adv_gas)
		adv_candidate = x;
	else if (adv_val[y] == adv_gas)
		adv_candidate = y;
	return adv_val[x] < adv_val[y] ? -1 : adv_val[x] > adv_val[y];
}

/*
 * sv_tab_sort of an array in a file: 100,000 elements of 72 bytes (28
 * runs of 3,640 at a 64 KB threshold: a window of 1 MB, runs of a quarter
 * of it), 3,641 (a run and one element) and 3,640 (sorted in place), with
 * random keys (many equal), sorted, reversed, all equal, up then down:
 * the keys qsort gives, every element whole (its fill follows its id),
 * no second file left (one array in a file, the descriptors as before).
 * An adversary that makes any quicksort quadratic gets at most 4 n log2 n
 * comparisons (the heapsort past the depth limit) and a sorted array.
 */
static void tab_sort(void)
{
	char dir[] = "/tmp/test_tabs.XXXXXX";
	T_OK(mkdtemp(dir) != NULL);
	sv_tab_configure(dir, 64 << 10, 0);
	struct sv_tab_stats st;
	static const size_t sizes[] = {100000, 3641, 3640};
	size_t fds = open_fds();
	for (int t = 0; t < 15; t++) {
		int kind = t % 5;
		size_t N = sizes[t / 5];
		struct sort_el *a = NULL, *want = malloc(N * sizeof *want);
		size_t cap;
		T_INT(0, sv_tab_alloc((void **)&a, &cap, N, sizeof *a));
		sv_tab_stats(&st);
		T_UINT(1, st.arrays);
		uint32_t r = 12345;
		for (uint32_t i = 0; i < N; i++) {
			r = r * 1103515245u + 12345u;
			uint32_t key = kind == 0   ? (r >> 8) % 1000
				       : kind == 1 ? i
				       : kind == 2 ? (uint32_t)N - i
				       : kind == 3 ? 7
						   : (i < N / 2 ? i : (uint32_t)N - i);
			a[i].key = key;
			a[i].id = i;
			memset(a[i].fill, (int)(i % 251), sizeof a[i].fill);
		}
		memcpy(want, a, N * sizeof *want);
		qsort(want, N, sizeof *want, cmp_el);
		sv_tab_sort(a, N, sizeof *a, cmp_el);
		bool keys = true, whole = true;
		unsigned char *seen = calloc(N, 1);
		for (uint32_t i = 0; i < N; i++) {
			keys &= a[i].key == want[i].key;
			whole &= a[i].id < N && !seen[a[i].id] &&
				 a[i].fill[0] == (char)(a[i].id % 251) &&
				 a[i].fill[63] == (char)(a[i].id % 251);
			if (a[i].id < N)
				seen[a[i].id] = 1;
		}
		T_OK(keys);
		T_OK(whole);
		sv_tab_stats(&st);
		T_UINT(1, st.arrays);
		T_UINT(fds + 1, open_fds());
		free(seen);
		free(want);
		sv_tab_free(a);
	}

	enum { M = 30000 };
	uint32_t *p = NULL;
	size_t cap;
	T_INT(0, sv_tab_alloc((void **)&p, &cap, M, sizeof *p));
	sv_tab_stats(&st);
	T_UINT(1, st.arrays);
	adv_val = malloc(M * sizeof *adv_val);
	adv_gas = M;
	adv_solid = 0;
	adv_cmps = 0;
	for (uint32_t i = 0; i < M; i++) {
		p[i] = i;
		adv_val[i] = adv_gas;
	}
	sv_tab_sort(p, M, sizeof *p, cmp_adv);
	T_OK(adv_cmps <= 4ull * M * 15);
	bool sorted = true;
	for (uint32_t i = 1; i < M; i++)
		sorted &= adv_val[p[i - 1]] <= adv_val[p[i]];
	T_OK(sorted);
	free(adv_val);
	sv_tab_free(p);
	sv_tab_configure(NULL, SV_TAB_SPILL, 0);
	T_INT(0, rmdir(dir));
}

/* A buffer made a blob in place: its bytes, one reference, and the
 * buffer empty after; a buffer never started so gives none. */
static void buf_to_blob(void)
{
	struct sv_buf b;
	T_INT(0, sv_buf_init_blob(&b));
	for (int i = 0; i < 1000; i++)
		T_INT(0, sv_buf_add(&b, "savefs", 6));
	struct sv_blob *blob = sv_buf_take_blob(&b);
	T_OK(blob != NULL);
	T_UINT(6000, blob->len);
	T_INT(1, blob->refs);
	T_MEM("savefssavefs", blob->data + 5988, 12);
	T_UINT(0, b.len);
	T_OK(b.p == NULL);
	sv_blob_unref(blob);
	sv_buf_init(&b);
	T_OK(sv_buf_take_blob(&b) == NULL);
}

/* ---- the workers that build ahead (core/ahead.c) ---- */

/* An owner whose jobs wait at a gate until it opens: how many ran, how
 * many were inside at once. */
struct gated {
	struct sv_ahead a;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int queued, ran, inside, most_inside;
	bool shut, stopping; /* stopping: the stop returned */
};

static bool gated_run(struct sv_ahead *o)
{
	struct gated *g = (struct gated *)o;
	pthread_mutex_lock(&g->lock);
	if (!g->queued) {
		pthread_mutex_unlock(&g->lock);
		return false;
	}
	g->queued--;
	if (g->queued)
		sv_ahead_post(&g->a);
	if (++g->inside > g->most_inside)
		g->most_inside = g->inside;
	pthread_cond_broadcast(&g->cond);
	while (g->shut)
		pthread_cond_wait(&g->cond, &g->lock);
	g->inside--;
	g->ran++;
	bool more = g->queued > 0;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	return more;
}

static void gated_init(struct gated *g, int jobs, bool shut)
{
	memset(g, 0, sizeof *g);
	g->a.run = gated_run;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->queued = jobs;
	g->shut = shut;
}

static void gated_wait(struct gated *g, int inside, int ran)
{
	pthread_mutex_lock(&g->lock);
	while (g->inside < inside || g->ran < ran)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static void gated_open(struct gated *g)
{
	pthread_mutex_lock(&g->lock);
	g->shut = false;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static void *stop_it(void *arg)
{
	struct gated *g = arg;
	sv_ahead_stop(&g->a);
	pthread_mutex_lock(&g->lock);
	g->stopping = true; /* (here: returned) */
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

static void ahead_pool(void)
{
	/* Two workers (whatever this machine has). */
	setenv("SAVEFS_TEST_AHEAD_WORKERS", "2", 1);
	struct gated a, b, s;
	gated_init(&a, 6, true);
	T_OK(sv_ahead_post(&a.a));
	T_UINT(2, sv_ahead_workers());
	/* One owner's jobs on both workers at once. */
	gated_wait(&a, 2, 0);
	gated_init(&b, 1, false);
	T_OK(sv_ahead_post(&b.a));
	gated_open(&a);
	gated_wait(&a, 0, 6);
	gated_wait(&b, 0, 1);
	T_INT(2, a.most_inside);
	T_INT(0, a.queued);
	/* (An owner's memory is the pool's until it is stopped: the worker
	 * that ran its last job may still be counting it.) */
	sv_ahead_stop(&a.a);
	sv_ahead_stop(&b.a);
	/* A stop waits for the jobs under way and lets no other start. */
	gated_init(&s, 5, true);
	T_OK(sv_ahead_post(&s.a));
	gated_wait(&s, 2, 0);
	pthread_t t;
	T_INT(0, pthread_create(&t, NULL, stop_it, &s));
	/* The stop has begun; the two jobs under way hold it until the gate
	 * opens. */
	while (!sv_ahead_stopping(&s.a))
		sched_yield();
	pthread_mutex_lock(&s.lock);
	T_OK(!s.stopping);
	pthread_mutex_unlock(&s.lock);
	gated_open(&s);
	T_INT(0, pthread_join(t, NULL));
	pthread_mutex_lock(&s.lock);
	T_OK(s.stopping);
	T_INT(0, s.inside);
	T_INT(2, s.ran);
	T_INT(3, s.queued);
	pthread_mutex_unlock(&s.lock);
	/* Stopped: posting it again runs nothing. */
	T_OK(!sv_ahead_post(&s.a));
	gated_init(&b, 1, false);
	T_OK(sv_ahead_post(&b.a));
	gated_wait(&b, 0, 1);
	pthread_mutex_lock(&s.lock);
	T_INT(2, s.ran);
	pthread_mutex_unlock(&s.lock);
	sv_ahead_stop(&b.a);
}

int main(void)
{
	buf_to_blob();
	lower_bound();
	u64set();
	newlines();
	parse_size();
	inflate_ok();
	inflate_sizes();
	inflate_bad();
	bufs();
	errs();
	opts();
	io();
	json_reals();
	tabs();
	tab_known_points();
	tab_window();
	tab_store_record();
	tab_sort();
	ahead_pool();
	return t_done();
}
