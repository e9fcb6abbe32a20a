/*
 * test_readahead.c - read-ahead across files: a reader going through a
 * directory in order gets exactly the bytes it gets without read-ahead,
 * while the worker decodes ahead, stepping one to four files at a time as
 * the reader does (and not at all for irregular steps); a reader jumping
 * around, two readers at once, and freeing the container with work still
 * queued are all safe (run under ASan, UBSan and TSan).
 */
#include "container.h"
#include "fmt/teeworlds/datafile.h"
#include "t.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define NDATA 200

static uint8_t payload[NDATA][6000]; /* over the read-ahead minimum */

static struct sv_buf build(void)
{
	struct sv_df_wdata data[NDATA];
	memset(data, 0, sizeof data);
	for (int i = 0; i < NDATA; i++) {
		for (size_t k = 0; k < sizeof payload[i]; k++)
			payload[i][k] = (uint8_t)(i * 7 + k / 5);
		data[i].raw = payload[i];
		data[i].raw_len = (uint32_t)(sizeof payload[i] - (size_t)i);
	}
	static const int32_t v[1] = {1};
	struct sv_df_witem it = {0, 0, (const uint8_t *)v, 4};
	struct sv_df_spec s = {.magic = "DATA", .version = 4, .items = &it, .nitems = 1,
			       .data = data, .ndata = NDATA, .level = -1};
	int fd = memfd_create("ra", 0);
	struct sv_err err;
	struct sv_buf b;
	sv_buf_init(&b);
	if (fd < 0 || sv_df_write(fd, &s, &err))
		return b;
	off_t n = lseek(fd, 0, SEEK_END);
	sv_buf_reserve(&b, (size_t)n);
	b.len = (size_t)pread(fd, b.p, (size_t)n, 0);
	close(fd);
	return b;
}

static struct sv_container *open_cap(const struct sv_buf *b, unsigned ra, uint64_t cap)
{
	struct sv_opts o;
	sv_opts_init(&o);
	o.readahead = ra;
	o.cache_cap = cap;
	struct sv_container *c = NULL;
	struct sv_err err;
	if (sv_container_open_mem(b->p, b->len, &o, &c, &err))
		fprintf(stderr, "open: %s\n", err.msg);
	return c;
}

static struct sv_container *open_with(const struct sv_buf *b, unsigned ra)
{
	return open_cap(b, ra, 64 << 10); /* small: read-ahead must not need more */
}

/* Reads data/<i>.bin and checks it against what was written. */
static void check_file(struct sv_container *c, int i)
{
	char path[32];
	snprintf(path, sizeof path, "data/%05d.bin", i);
	uint32_t n;
	struct sv_blob *blob = NULL;
	T_INT(0, sv_resolve(c, path, &n));
	T_INT(0, sv_content(c, n, &blob, NULL));
	if (blob) {
		T_UINT(sizeof payload[i] - (size_t)i, blob->len);
		T_MEM(payload[i], blob->data, blob->len);
	}
	sv_blob_unref(blob);
}

/* The files the worker has decoded: "read_ahead" in /.savefs/info. */
static long read_ahead(struct sv_container *c)
{
	uint32_t n;
	struct sv_blob *info = NULL;
	long decoded = -1;
	if (!sv_resolve(c, ".savefs/info", &n) && !sv_content(c, n, &info, NULL)) {
		char *s = strndup((const char *)info->data, info->len);
		const char *p = s ? strstr(s, "\"read_ahead\": ") : NULL;
		decoded = p ? atol(p + 14) : -1;
		free(s);
	}
	sv_blob_unref(info);
	return decoded;
}

/* Waits (up to 10 s, so a busy machine cannot fail this) until the worker
 * has decoded at least want files; returns how many it has. */
static long wait_read_ahead(struct sv_container *c, long want)
{
	long decoded = read_ahead(c);
	for (int tries = 0; tries < 1000 && decoded >= 0 && decoded < want; tries++) {
		usleep(10000);
		decoded = read_ahead(c);
	}
	return decoded;
}

/*
 * Every stride-th file in order (`cat *.txt` over .bin/.png/.txt views
 * reads every third): once the step is seen twice, the worker decodes the
 * next 8 files at that step, the ones the reader asks for next, and not
 * the ones between.  The cache is large enough to keep all of them.
 */
static void test_stride(const struct sv_buf *b, int stride)
{
	struct sv_container *c = open_cap(b, 8, 4 << 20);
	T_OK(c != NULL);
	if (!c)
		return;
	check_file(c, 0);
	check_file(c, stride);
	T_INT(0, read_ahead(c)); /* a step seen once is not believed (but 1) */
	check_file(c, 2 * stride);
	/* Queued: 3 * stride .. 10 * stride, eight files, and no more. */
	T_INT(8, wait_read_ahead(c, 8));
	usleep(50000);
	T_INT(8, read_ahead(c));

	/* They are the next ones the reader reads: cache hits, each; and
	 * each read queues one more at the same step. */
	struct sv_cache_stats before, after;
	sv_container_cache_stats(c, &before);
	for (int k = 3; k <= 10; k++)
		check_file(c, k * stride);
	sv_container_cache_stats(c, &after);
	T_UINT(before.hits + 8, after.hits);
	T_INT(16, wait_read_ahead(c, 16));

	/* The files between them were not decoded: a miss (a jump back,
	 * which queues nothing). */
	usleep(50000);
	T_INT(16, read_ahead(c));
	sv_container_cache_stats(c, &before);
	check_file(c, 3 * stride + 1);
	sv_container_cache_stats(c, &after);
	T_UINT(before.hits, after.hits);
	T_OK(after.misses > before.misses);
	/* ... nor the one past the last queued (18 * stride). */
	sv_container_cache_stats(c, &before);
	check_file(c, 19 * stride);
	sv_container_cache_stats(c, &after);
	T_UINT(before.hits, after.hits);
	sv_container_free(c);
}

/* A reader whose steps keep changing, or are longer than four places,
 * or go backwards, gets no read-ahead: the worker never decodes a file. */
static void test_irregular(const struct sv_buf *b)
{
	static const int orders[][10] = {
		{ 0, 3, 5, 9, 11, 14, 18, 20, 23, 27 }, /* steps 3 2 4 2 3 4 2 3 4 */
		{ 0, 5, 10, 15, 20, 25, 30, 35, 40, 45 }, /* 5: too far */
		{ 90, 87, 84, 81, 78, 75, 72, 69, 66, 63 }, /* backwards */
		{ 0, 2, 0, 2, 0, 2, 0, 2, 0, 2 },     /* back and forth */
		{ 7, 7, 7, 7, 11, 11, 11, 13, 13, 13 }, /* the same file again */
	};
	for (size_t k = 0; k < sizeof orders / sizeof orders[0]; k++) {
		struct sv_container *c = open_cap(b, 8, 4 << 20);
		T_OK(c != NULL);
		for (int i = 0; c && i < 10; i++)
			check_file(c, orders[k][i]);
		usleep(50000); /* anything queued would be decoded by now */
		if (c)
			T_INT(0, read_ahead(c));
		sv_container_free(c);
	}
}

static void *reader(void *arg)
{
	struct sv_container *c = arg;
	for (int i = 0; i < NDATA; i++) {
		char path[32];
		snprintf(path, sizeof path, "data/%05d.bin", i);
		uint32_t n;
		struct sv_blob *b = NULL;
		if (!sv_resolve(c, path, &n) && !sv_content(c, n, &b, NULL) &&
		    (b->len != sizeof payload[i] - (size_t)i ||
		     memcmp(b->data, payload[i], b->len)))
			abort(); /* t.h is not thread-safe: fail loudly */
		sv_blob_unref(b);
	}
	return NULL;
}

int main(void)
{
	struct sv_buf b = build();
	T_OK(b.len > 0);

	/* In order, with and without read-ahead: the same bytes. */
	for (unsigned ra = 0; ra <= 8; ra += 8) {
		struct sv_container *c = open_with(&b, ra);
		T_OK(c != NULL);
		for (int i = 0; c && i < NDATA; i++)
			check_file(c, i);
		struct sv_cache_stats st;
		if (c) {
			sv_container_cache_stats(c, &st);
			T_OK(st.bytes <= st.cap);
			/* /.savefs/info counts the files the worker decoded. */
			uint32_t n;
			struct sv_blob *info = NULL;
			T_INT(0, sv_resolve(c, ".savefs/info", &n));
			T_INT(0, sv_content(c, n, &info, NULL));
			if (info) {
				char *s = strndup((const char *)info->data, info->len);
				if (!ra)
					T_HAS(s, "\"read_ahead\": 0\n");
				free(s);
			}
			sv_blob_unref(info);
		}
		sv_container_free(c);
	}

	/* Two files in order queue the next ones: the worker decodes them
	 * (waited for, up to 10 s, so a busy machine cannot fail this). */
	struct sv_container *c = open_with(&b, 8);
	check_file(c, 0);
	check_file(c, 1);
	long decoded = 0;
	for (int tries = 0; c && tries < 1000 && decoded == 0; tries++) {
		uint32_t n;
		struct sv_blob *info = NULL;
		if (!sv_resolve(c, ".savefs/info", &n) && !sv_content(c, n, &info, NULL)) {
			char *s = strndup((const char *)info->data, info->len);
			const char *p = strstr(s, "\"read_ahead\": ");
			decoded = p ? atol(p + 14) : -1;
			free(s);
		}
		sv_blob_unref(info);
		if (decoded == 0)
			usleep(10000);
	}
	T_OK(decoded > 0);
	for (int i = 2; c && i < NDATA; i++)
		check_file(c, i);
	sv_container_free(c);

	/* Jumping around, then in order again, then backwards. */
	c = open_with(&b, 8);
	for (int i = 0; c && i < NDATA; i += 37)
		check_file(c, i);
	for (int i = 50; c && i < 120; i++)
		check_file(c, i);
	for (int i = NDATA - 1; c && i >= 0; i -= 3)
		check_file(c, i);
	sv_container_free(c);

	/* Every second, third and fourth file. */
	for (int stride = 2; stride <= 4; stride++)
		test_stride(&b, stride);
	test_irregular(&b);

	/* Two readers at once over one container. */
	c = open_with(&b, 8);
	pthread_t t[2];
	for (int k = 0; c && k < 2; k++)
		T_INT(0, pthread_create(&t[k], NULL, reader, c));
	for (int k = 0; c && k < 2; k++)
		pthread_join(t[k], NULL);
	sv_container_free(c);

	/* Freed right after queueing work. */
	c = open_with(&b, 64);
	for (int i = 0; c && i < 3; i++)
		check_file(c, i);
	sv_container_free(c);

	sv_buf_fini(&b);
	return t_done();
}
