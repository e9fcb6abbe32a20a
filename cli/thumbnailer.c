/*
 * thumbnailer.c - savefs-thumbnailer: a freedesktop thumbnailer.  A file
 * manager runs it (data/savefs.thumbnailer's Exec line) as
 *
 *     savefs-thumbnailer -s SIZE INPUT OUTPUT
 *
 * and gets OUTPUT, a PNG of the container's preview (the picture its
 * format names in its tree: a level's or a world's preview.png, a map's
 * game layer) that fits in SIZE x SIZE: scaled down by averaging, or a
 * small picture (a map of a few hundred tiles) scaled up by a whole
 * factor, pixels kept sharp.  No mount: the tree is read as savefs ls
 * reads it, with nothing kept on disk.
 *
 * Bounded: a file manager runs it on whatever a folder holds.  At most
 * THUMB_SECONDS of time (then SIGALRM ends it), THUMB_MEMORY of address
 * space (unless built with a sanitizer, which reserves more than that),
 * THUMB_DECODE bytes for any one file of the tree.  Whatever fails, the
 * exit is non-zero and OUTPUT is not made (written beside it, renamed).
 */
#include "savefs.h"

#include <errno.h>
#include <limits.h>
#include <png.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define THUMB_SECONDS 20
#define THUMB_MEMORY (1ull << 30)
#define THUMB_DECODE (128u << 20)
#define THUMB_PICTURE (16384u * 16384u) /* pixels of a preview at most */

static const char *input;

static int fail(const char *what)
{
	size_t n = input ? strlen(input) : 0;
	if (n && !strncmp(what, input, n) && what[n] == ':')
		fprintf(stderr, "savefs-thumbnailer: %s\n", what); /* it names the file */
	else
		fprintf(stderr, "savefs-thumbnailer: %s: %s\n", input ? input : "", what);
	return 1;
}

/* One channel of the box [x0, x1) x [y0, y1) of RGBA src (w wide),
 * averaged; colours weighted by their alpha. */
static void box(const uint8_t *src, uint32_t w, uint32_t x0, uint32_t x1, uint32_t y0,
		uint32_t y1, uint8_t out[4])
{
	uint64_t sum[4] = {0}, n = 0;
	for (uint32_t y = y0; y < y1; y++)
		for (uint32_t x = x0; x < x1; x++) {
			const uint8_t *p = src + ((size_t)y * w + x) * 4;
			for (int c = 0; c < 3; c++)
				sum[c] += (uint64_t)p[c] * p[3];
			sum[3] += p[3];
			n++;
		}
	for (int c = 0; c < 3; c++)
		out[c] = sum[3] ? (uint8_t)((sum[c] + sum[3] / 2) / sum[3]) : 0;
	out[3] = n ? (uint8_t)((sum[3] + n / 2) / n) : 0;
}

/* src (w x h RGBA) fitted in size x size: a new buffer of *ow x *oh. */
static uint8_t *fit(const uint8_t *src, uint32_t w, uint32_t h, uint32_t size, uint32_t *ow,
		    uint32_t *oh)
{
	uint32_t big = w > h ? w : h;
	if (big <= size / 2) {
		/* Small: a whole factor up, each pixel a square. */
		uint32_t k = size / big;
		*ow = w * k;
		*oh = h * k;
		uint8_t *out = malloc((size_t)*ow * *oh * 4);
		for (uint32_t y = 0; out && y < *oh; y++)
			for (uint32_t x = 0; x < *ow; x++)
				memcpy(out + ((size_t)y * *ow + x) * 4,
				       src + ((size_t)(y / k) * w + x / k) * 4, 4);
		return out;
	}
	*ow = big <= size ? w : (uint32_t)((uint64_t)w * size / big);
	*oh = big <= size ? h : (uint32_t)((uint64_t)h * size / big);
	if (!*ow)
		*ow = 1;
	if (!*oh)
		*oh = 1;
	uint8_t *out = malloc((size_t)*ow * *oh * 4);
	for (uint32_t y = 0; out && y < *oh; y++) {
		uint32_t y0 = (uint32_t)((uint64_t)y * h / *oh), y1 = (uint32_t)((uint64_t)(y + 1) * h / *oh);
		for (uint32_t x = 0; x < *ow; x++) {
			uint32_t x0 = (uint32_t)((uint64_t)x * w / *ow);
			uint32_t x1 = (uint32_t)((uint64_t)(x + 1) * w / *ow);
			box(src, w, x0, x1 > x0 ? x1 : x0 + 1, y0, y1 > y0 ? y1 : y0 + 1,
			    out + ((size_t)y * *ow + x) * 4);
		}
	}
	return out;
}

static int usage(void)
{
	fprintf(stderr, "usage: savefs-thumbnailer [-s SIZE] INPUT OUTPUT\n"
		"Writes OUTPUT, a PNG of the preview of the save container INPUT (a\n"
		"Sketchy Maze level, doodad or levelpack, a DDNet map, a Starbound\n"
		"world) within SIZE x SIZE pixels (default 256).  Exit 0, or 1 and no\n"
		"OUTPUT (no preview, a damaged file, over %d s or %llu MiB), 2: usage.\n",
		THUMB_SECONDS, THUMB_MEMORY >> 20);
	return 2;
}

int main(int argc, char **argv)
{
	uint32_t size = 256;
	int opt;
	while ((opt = getopt(argc, argv, "s:h")) != -1) {
		char *end;
		unsigned long v;
		switch (opt) {
		case 's':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 4096)
				return usage();
			size = (uint32_t)v;
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != 2)
		return usage();
	input = argv[optind];
	const char *output = argv[optind + 1];
	alarm(THUMB_SECONDS);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	struct rlimit rl = {THUMB_MEMORY, THUMB_MEMORY};
	setrlimit(RLIMIT_AS, &rl);
#endif
	struct sv_opts o;
	sv_opts_init(&o);
	o.read_only = true;
	o.noindex = true;
	o.readahead = 0;
	o.cache_cap = 32u << 20;
	o.max_decode = THUMB_DECODE;
	struct sv_tree *t = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	if (strstr(input, "://"))
		return fail("not a local file");
	int rc = sv_tree_open(input, &o, &t, &err);
	if (rc)
		return fail(err.msg[0] ? err.msg : strerror(-rc));
	sv_id n;
	struct sv_blob *png = NULL;
	if (sv_tree_preview(t, &n)) {
		sv_tree_free(t);
		return fail("no preview in it");
	}
	rc = sv_tree_content(t, n, &png, &err);
	sv_tree_free(t);
	if (rc)
		return fail(err.msg[0] ? err.msg : strerror(-rc));
	png_image im;
	memset(&im, 0, sizeof im);
	im.version = PNG_IMAGE_VERSION;
	uint8_t *rgba = NULL;
	if (png_image_begin_read_from_memory(&im, png->data, png->len)) {
		im.format = PNG_FORMAT_RGBA;
		if ((uint64_t)im.width * im.height <= THUMB_PICTURE && im.width && im.height)
			rgba = malloc(PNG_IMAGE_SIZE(im));
		if (rgba && !png_image_finish_read(&im, NULL, rgba, 0, NULL)) {
			free(rgba);
			rgba = NULL;
		}
		if (!rgba)
			png_image_free(&im);
	}
	sv_blob_unref(png);
	if (!rgba)
		return fail("its preview is not a PNG it can read");
	uint32_t ow, oh;
	uint8_t *out = fit(rgba, im.width, im.height, size, &ow, &oh);
	free(rgba);
	if (!out)
		return fail("out of memory");
	png_image wr;
	memset(&wr, 0, sizeof wr);
	wr.version = PNG_IMAGE_VERSION;
	wr.width = ow;
	wr.height = oh;
	wr.format = PNG_FORMAT_RGBA;
	char tmp[PATH_MAX];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.savefs-XXXXXX", output) >= sizeof tmp) {
		free(out);
		return fail("the output's name is too long");
	}
	int fd = mkstemp(tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	bool ok = f && png_image_write_to_stdio(&wr, f, 0, out, 0, NULL);
	free(out);
	if (f && fclose(f))
		ok = false;
	else if (!f && fd >= 0)
		close(fd);
	/* (Not ended by the alarm between here and the rename.) */
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	if (ok && rename(tmp, output))
		ok = false;
	if (!ok) {
		if (fd >= 0)
			unlink(tmp);
		return fail(fd < 0 ? "cannot write beside the output" : "cannot write the output");
	}
	return 0;
}
