/*
 * replay.c - a plain driver for a libFuzzer target: calls
 * LLVMFuzzerTestOneInput once on every file named on the command line and
 * on every file in every directory named there (not recursive; names
 * starting with '.' are skipped).  Lets the corpus and the saved crashers
 * replay under `meson test` with any compiler.  Exit 0 when every input
 * ran (a crash ends the process with the sanitizer's report), 1 if an
 * argument cannot be read.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 1;
	}
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *p = realloc(buf, cap);
			if (!p) {
				fprintf(stderr, "replay: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return 1;
			}
			buf = p;
		}
		size_t k = fread(buf + len, 1, cap - len, f);
		len += k;
		if (k == 0)
			break;
	}
	int err = ferror(f);
	fclose(f);
	if (err) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		return 1;
	}
	/* An exact-size copy, so that ASan sees reads past the input. */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return 1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	int fails = 0, runs = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			fails++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			fails += run_file(argv[i]);
			runs++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			fails++;
			continue;
		}
		/* Sorted, so that a failing run names the same file every time. */
		char **names = NULL;
		size_t n = 0, cap = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				char **p = realloc(names, cap * sizeof *p);
				if (!p)
					return 1;
				names = p;
			}
			names[n++] = strdup(e->d_name);
		}
		closedir(d);
		if (n) /* qsort takes no NULL, even for nothing */
			qsort(names, n, sizeof *names, cmp_str);
		for (size_t k = 0; k < n; k++) {
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
			if (!stat(path, &st) && S_ISREG(st.st_mode)) {
				fprintf(stderr, "replay: %s\n", path);
				fails += run_file(path);
				runs++;
			}
			free(names[k]);
		}
		free(names);
	}
	fprintf(stderr, "replay: %d inputs, %d unreadable\n", runs, fails);
	return fails ? 1 : 0;
}
