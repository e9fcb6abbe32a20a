/*
 * test_bad.c - every malformed datafile in tests/data/bad/datafile/ gives
 * its exact message, in-process and through the command line.
 *
 *   test_bad DIR SAVEFS
 *
 * For each DIR/NAME.map, NAME.msg holds the message and NAME.how one of
 * (see make.py there):
 *   fails: savefs info exits N
 *       opening fails (from the file and from memory) with that message and
 *       an errno the command line maps to N; `SAVEFS info` exits N and
 *       prints "savefs: <msg>" on stderr, nothing on stdout.
 *   mounts: PATH reads EIO (savefs cat exits N)
 *       the container opens; PATH reads -EIO with that message, which is
 *       also in /.savefs/log; every other file reads; `SAVEFS info` exits
 *       0; `SAVEFS cat` of PATH exits N with "savefs: PATH: <msg>".
 * Exit 0 if all hold, 1 otherwise, 77 if DIR holds no variant.
 */
#include "cli/cli.h"
#include "savefs.h"
#include "t.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char *read_text(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	struct sv_buf b;
	sv_buf_init(&b);
	char tmp[4096];
	ssize_t k;
	while ((k = read(fd, tmp, sizeof tmp)) > 0)
		sv_buf_add(&b, tmp, (size_t)k);
	close(fd);
	sv_buf_add(&b, "", 1);
	if (len)
		*len = b.len - 1;
	return (char *)b.p;
}

static void chomp(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
}

/* Runs argv with stdout and stderr captured; returns the exit status (or
 * 128 + signal). */
static int run(char *const argv[], char **out, char **err)
{
	int fo = memfd_create("out", 0), fe = memfd_create("err", 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fo, 1);
	posix_spawn_file_actions_adddup2(&fa, fe, 2);
	pid_t pid;
	int status = -1;
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ)) {
		fprintf(stderr, "cannot run %s\n", argv[0]);
	} else {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	posix_spawn_file_actions_destroy(&fa);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fo);
	*out = read_text(path, NULL);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fe);
	*err = read_text(path, NULL);
	close(fo);
	close(fe);
	return status;
}

/* The command line's exit code for an open error (cli/cli.c). */
struct walk {
	struct sv_container *c;
	uint32_t bad;   /* the one file that must fail */
	int failed;     /* other files that failed */
};

static int visit(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct walk *w = arg;
	(void)next;
	if (st->dir) {
		if (strcmp(name, ".savefs"))
			sv_readdir(w->c, st->node, 0, visit, w);
		return 0;
	}
	if (st->node == w->bad)
		return 0;
	struct sv_blob *b = NULL;
	struct sv_err err;
	if (sv_content(w->c, st->node, &b, &err)) {
		fprintf(stderr, "  %s fails too: %s\n", name, err.msg);
		w->failed++;
	} else if (b->len != st->size) {
		fprintf(stderr, "  %s: stat said %llu bytes, read %zu\n", name,
			(unsigned long long)st->size, b->len);
		w->failed++;
	}
	sv_blob_unref(b);
	return 0;
}

static void header_case(const char *file, const char *msg, int code, const char *savefs)
{
	struct sv_opts o;
	sv_opts_init(&o);
	o.read_only = true;
	struct sv_container *c = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_container_open(file, &o, &c, &err);
	T_OK(rc < 0);
	T_OK(c == NULL);
	T_INT(code, sv_cli_open_exit(rc));
	T_STR(msg, err.msg);
	sv_container_free(c);

	/* The same from memory. */
	size_t len;
	char *bytes = read_text(file, &len);
	sv_err_clear(&err);
	o.format = "datafile";
	rc = sv_container_open_mem(bytes, len, &o, &c, &err);
	T_INT(code, sv_cli_open_exit(rc));
	T_STR(msg, err.msg);
	free(bytes);

	char *argv[] = {(char *)savefs, "info", (char *)file, NULL};
	char *out, *errs;
	T_INT(code, run(argv, &out, &errs));
	char want[SV_ERR_MAX + 16];
	snprintf(want, sizeof want, "savefs: %s\n", msg);
	T_STR(want, errs);
	T_STR("", out);
	free(out);
	free(errs);
}

static void entry_case(const char *file, const char *msg, const char *path, int code,
		       const char *savefs)
{
	struct sv_opts o;
	sv_opts_init(&o);
	o.read_only = true;
	struct sv_container *c = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_container_open(file, &o, &c, &err);
	if (rc)
		fprintf(stderr, "  open: %s\n", err.msg);
	T_INT(0, rc);
	if (!c)
		return;
	uint32_t n = SV_NONE;
	T_INT(0, sv_resolve(c, path, &n));
	struct sv_blob *b = NULL;
	sv_err_clear(&err);
	T_INT(-EIO, sv_content(c, n, &b, &err));
	T_OK(b == NULL);
	T_STR(msg, err.msg);
	/* Again: a failure is not cached as success. */
	uint8_t buf[16];
	size_t got = 1;
	T_INT(-EIO, sv_read(c, n, 0, buf, sizeof buf, &got, &err));
	T_UINT(0, got);
	T_STR(msg, err.msg);
	/* The log says which file and why. */
	uint32_t ln;
	struct sv_blob *log = NULL;
	T_INT(0, sv_resolve(c, ".savefs/log", &ln));
	T_INT(0, sv_content(c, ln, &log, NULL));
	char line[SV_ERR_MAX + 300];
	snprintf(line, sizeof line, "read %s: %s\n", path, msg);
	char *text = log ? strndup((const char *)log->data, log->len) : NULL;
	T_HAS(text, line);
	free(text);
	sv_blob_unref(log);
	/* Every other file reads, at the size stat gives. */
	struct walk w = {.c = c, .bad = n};
	sv_readdir(c, SV_ROOT, 0, visit, &w);
	T_INT(0, w.failed);
	sv_container_free(c);

	char *argv[] = {(char *)savefs, "info", (char *)file, NULL};
	char *out, *errs;
	T_INT(0, run(argv, &out, &errs));
	T_STR("", errs);
	free(out);
	free(errs);
	char *argv2[] = {(char *)savefs, "cat", (char *)file, (char *)path, NULL};
	T_INT(code, run(argv2, &out, &errs));
	char want[SV_ERR_MAX + 300];
	snprintf(want, sizeof want, "savefs: %s: %s\n", path, msg);
	T_STR(want, errs);
	T_STR("", out);
	free(out);
	free(errs);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_bad DIR SAVEFS\n");
		return 2;
	}
	const char *dir = argv[1], *savefs = argv[2];
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return 1;
	}
	char *names[256];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 256) {
		size_t k = strlen(e->d_name);
		if (k > 4 && !strcmp(e->d_name + k - 4, ".map"))
			names[n++] = strndup(e->d_name, k - 4);
	}
	closedir(d);
	if (!n) {
		fprintf(stderr, "%s: no variants\n", dir);
		return 77;
	}
	qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n; i++) {
		char file[4096], mpath[4096], hpath[4096];
		snprintf(file, sizeof file, "%s/%s.map", dir, names[i]);
		snprintf(mpath, sizeof mpath, "%s/%s.msg", dir, names[i]);
		snprintf(hpath, sizeof hpath, "%s/%s.how", dir, names[i]);
		char *msg = read_text(mpath, NULL), *how = read_text(hpath, NULL);
		int before = t_fails;
		fprintf(stderr, "%s\n", names[i]);
		if (!msg || !how) {
			fprintf(stderr, "  missing %s or %s\n", mpath, hpath);
			T_OK(0);
		} else {
			chomp(msg);
			chomp(how);
			int code;
			char path[256];
			if (sscanf(how, "fails: savefs info exits %d", &code) == 1) {
				header_case(file, msg, code, savefs);
			} else if (sscanf(how, "mounts: %255s reads EIO (savefs cat exits %d)", path,
					  &code) == 2) {
				entry_case(file, msg, path, code, savefs);
			} else {
				fprintf(stderr, "  %s: cannot parse \"%s\"\n", hpath, how);
				T_OK(0);
			}
		}
		if (t_fails != before)
			fprintf(stderr, "  ^ %s FAILED\n", names[i]);
		free(msg);
		free(how);
		free(names[i]);
	}
	return t_done();
}
