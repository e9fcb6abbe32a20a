/*
 * recordtool.c - for the tests of the persistent index and the disk cache
 * of blocks (core/index.c): `recordtool spoil FILE...` changes each
 * record's payload (every byte inverted) and writes the hash of the new
 * payload into its header, as someone who can write the cache directory
 * could: a record that passes its hash check and is wrong all the same.
 * The header's layout is index.c's (struct head).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define HEAD 160         /* sizeof(struct head) in core/index.c */
#define HASH_AT 88       /* its payload_hash */
#define MAGIC "savefs-index\n"

static int spoil(const char *path)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || st.st_size < HEAD) {
		fprintf(stderr, "recordtool: %s: not a record\n", path);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *p = malloc(n);
	if (!p || pread(fd, p, n, 0) != (ssize_t)n || memcmp(p, MAGIC, strlen(MAGIC))) {
		fprintf(stderr, "recordtool: %s: not a record\n", path);
		free(p);
		close(fd);
		return 1;
	}
	for (size_t i = HEAD; i < n; i++)
		p[i] = (uint8_t)~p[i];
	uint64_t h = XXH3_64bits(p + HEAD, n - HEAD);
	memcpy(p + HASH_AT, &h, sizeof h);
	int rc = pwrite(fd, p, n, 0) == (ssize_t)n ? 0 : 1;
	free(p);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3 || strcmp(argv[1], "spoil")) {
		fprintf(stderr, "usage: recordtool spoil FILE...\n");
		return 2;
	}
	int rc = 0;
	for (int i = 2; i < argc; i++)
		rc |= spoil(argv[i]);
	return rc;
}
