/*
 * test_bad.c - every malformed (or oddly formed) container in a directory
 * of tests/data/bad/ gives its exact message, in-process and through the
 * command line.
 *
 *   test_bad DIR SAVEFS
 *
 * Every regular file DIR/NAME.EXT is a container, whatever its extension,
 * except make.py and the files that describe one: NAME.msg holds the
 * message (one line; no file for none), NAME.how says what happens, and
 * NAME.expect (optional) what a file reads.  Opening from memory forces the
 * format named like DIR (tests/data/bad/datafile: "datafile"; sniffed when
 * no format has that name).  The first line of NAME.how is one of (see
 * make.py there):
 *   fails: savefs info exits N
 *       opening fails (from the file and from memory) with that message and
 *       an errno the command line maps to N; `SAVEFS info` exits N and
 *       prints "savefs: <msg>" on stderr, nothing on stdout.
 *   mounts: PATH reads EIO (savefs cat exits N)
 *       the container opens (from the file and from memory); PATH reads
 *       -EIO with that message, which is also in /.savefs/log; every other
 *       file reads at the size stat gives; `SAVEFS info` exits 0;
 *       `SAVEFS cat` of PATH exits N with "savefs: PATH: <msg>".  Each
 *       further line "also: PATH2" names another file (another view of the
 *       same entry) that reads -EIO with the same message.
 *   mounts: DIR2 lists EIO
 *       the container opens; listing directory DIR2 (a lazily opened nested
 *       container) fails with -EIO and the log says "cannot list DIR2:
 *       <msg>"; every other file reads; `SAVEFS info` exits 0.
 *   mounts: PATH reads OK, log has the message
 *   mounts: PATH reads OK, info warns the message
 *   mounts: PATH reads OK, log is empty
 *       tolerated input: the container opens and every file reads at the
 *       size stat gives; PATH reads NAME.expect's bytes when that file
 *       exists.  After everything was read, /.savefs/log holds a line with
 *       the message; or the "warnings" of /.savefs/info hold it; or the log
 *       holds nothing at all.  `SAVEFS info` exits 0 with nothing on
 *       stderr; `SAVEFS cat` of PATH exits 0 and prints what PATH reads.
 * After any "mounts:" line, each line "warns: MSG" names a further message
 * the "warnings" of /.savefs/info hold once the container is open (a
 * malformed line reported at open, besides a file that reads EIO).
 * Exit 0 if all hold, 1 otherwise, 77 if DIR holds no variant.
 */
#include "cli/cli.h"
#include "container.h"
#include "savefs.h"
#include "t.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_ALSO 8

/* The format DIR is named after, or NULL (then sniffed). */
static const char *format;

static char *read_text(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (len)
		*len = 0;
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
 * 128 + signal).  *outlen (if not NULL) receives stdout's length. */
static int run(char *const argv[], char **out, size_t *outlen, char **err)
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
	*out = read_text(path, outlen);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fe);
	*err = read_text(path, NULL);
	close(fo);
	close(fe);
	return status;
}

/* A walk over every file: each must read at the size stat gives, except
 * the ones in skip (which are checked on their own). */
struct walk {
	struct sv_container *c;
	uint32_t skip[MAX_ALSO + 1];
	size_t nskip;
	int failed;     /* other files that failed */
};

struct kids {
	uint32_t *v;
	char **names; /* of entries listed without a node (looked up after) */
	size_t n, cap;
};

static int collect(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct kids *k = arg;
	(void)next;
	if (!strcmp(name, ".savefs"))
		return 0;
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 32;
		uint32_t *v = realloc(k->v, k->cap * sizeof *v);
		if (v)
			k->v = v;
		char **names = realloc(k->names, k->cap * sizeof *names);
		if (names)
			k->names = names;
		if (!v || !names)
			return 1;
	}
	k->names[k->n] = st->unmade ? strdup(name) : NULL;
	k->v[k->n++] = st->node;
	return 0;
}

/* The listed entries' nodes, those listed without one looked up. */
static void kids_made(struct sv_container *c, uint32_t dir, struct kids *k)
{
	for (size_t i = 0; i < k->n; i++) {
		if (k->names[i] && sv_lookup(c, dir, k->names[i], &k->v[i]))
			k->v[i] = SV_NONE;
		free(k->names[i]);
		k->names[i] = NULL;
	}
	free(k->names);
	k->names = NULL;
}

/* Walks dir.  The children are listed first and visited after: a lazy
 * directory cannot be expanded from inside sv_readdir's callback (the
 * container's lock is held there). */
static void walk_dir(struct walk *w, uint32_t dir)
{
	struct kids k = {0};
	/* A directory that does not list is checked by its own case. */
	sv_readdir(w->c, dir, 0, collect, &k);
	kids_made(w->c, dir, &k);
	for (size_t i = 0; i < k.n; i++) {
		struct sv_stat st;
		char name[4096];
		if (sv_stat(w->c, k.v[i], &st) || sv_path(w->c, k.v[i], name, sizeof name)) {
			w->failed++;
			continue;
		}
		if (st.dir) {
			walk_dir(w, st.node);
			continue;
		}
		bool skip = false;
		for (size_t j = 0; j < w->nskip; j++)
			skip |= st.node == w->skip[j];
		if (skip)
			continue;
		struct sv_blob *b = NULL;
		struct sv_err err;
		int crc = sv_content(w->c, st.node, &b, &err);
		/* A stream stat did not wait to size: read whole, it is now. */
		if (!crc && st.unsized)
			sv_stat(w->c, k.v[i], &st);
		if (crc) {
			fprintf(stderr, "  %s fails too: %s\n", name, err.msg);
			w->failed++;
		} else if (b->len != st.size) {
			fprintf(stderr, "  %s: stat said %llu bytes, read %zu\n", name,
				(unsigned long long)st.size, b->len);
			w->failed++;
		}
		sv_blob_unref(b);
	}
	free(k.v);
}

/* The text of a meta file (/.savefs/log or info), or NULL. */
static char *meta_text(struct sv_container *c, const char *path)
{
	uint32_t n;
	struct sv_blob *b = NULL;
	T_INT(0, sv_resolve(c, path, &n));
	T_INT(0, sv_content(c, n, &b, NULL));
	char *text = b ? strndup((const char *)b->data, b->len) : NULL;
	sv_blob_unref(b);
	return text;
}

static struct sv_container *open_file(const char *file)
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
	return c;
}

/* Opening from memory gives what opening the file gave. */
static void open_mem(const char *file, int want_rc, int code, const char *msg)
{
	struct sv_opts o;
	sv_opts_init(&o);
	o.format = format;
	struct sv_container *c = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	size_t len = 0;
	char *bytes = read_text(file, &len);
	T_OK(bytes != NULL);
	int rc = sv_container_open_mem(bytes ? bytes : "", len, &o, &c, &err);
	if (want_rc) {
		T_INT(code, sv_cli_open_exit(rc));
		T_STR(msg, err.msg);
	} else {
		if (rc)
			fprintf(stderr, "  open from memory: %s\n", err.msg);
		T_INT(0, rc);
	}
	sv_container_free(c);
	free(bytes);
}

/* `SAVEFS info FILE` exits 0 with nothing on stderr. */
static void cli_info_ok(const char *file, const char *savefs)
{
	char *argv[] = {(char *)savefs, "info", (char *)file, NULL};
	char *out, *errs;
	T_INT(0, run(argv, &out, NULL, &errs));
	T_STR("", errs);
	free(out);
	free(errs);
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
	open_mem(file, 1, code, msg);

	char *argv[] = {(char *)savefs, "info", (char *)file, NULL};
	char *out, *errs;
	T_INT(code, run(argv, &out, NULL, &errs));
	char want[SV_ERR_MAX + 4200];
	snprintf(want, sizeof want, "savefs: %s: %s\n", file, msg);
	T_STR(want, errs);
	T_STR("", out);
	free(out);
	free(errs);
}

/* Path reads -EIO with msg, twice, and the log says so. */
static void reads_eio(struct sv_container *c, const char *path, const char *msg,
		      uint32_t *node)
{
	uint32_t n = SV_NONE;
	T_INT(0, sv_resolve(c, path, &n));
	*node = n;
	struct sv_blob *b = NULL;
	struct sv_err err;
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
	char line[SV_ERR_MAX + 300];
	snprintf(line, sizeof line, "read %s: %s\n", path, msg);
	char *text = meta_text(c, ".savefs/log");
	T_HAS(text, line);
	free(text);
}

static void entry_case(const char *file, const char *msg, const char *path, int code,
		       char *const *also, size_t nalso, const char *savefs)
{
	struct sv_container *c = open_file(file);
	if (!c)
		return;
	struct walk w = {.c = c};
	reads_eio(c, path, msg, &w.skip[w.nskip++]);
	for (size_t i = 0; i < nalso; i++)
		reads_eio(c, also[i], msg, &w.skip[w.nskip++]);
	/* Every other file reads, at the size stat gives. */
	walk_dir(&w, SV_ROOT);
	T_INT(0, w.failed);
	sv_container_free(c);
	if (format)
		open_mem(file, 0, 0, NULL);

	cli_info_ok(file, savefs);
	char *argv2[] = {(char *)savefs, "cat", (char *)file, (char *)path, NULL};
	char *out, *errs;
	T_INT(code, run(argv2, &out, NULL, &errs));
	char want[SV_ERR_MAX + 300];
	snprintf(want, sizeof want, "savefs: %s: %s\n", path, msg);
	T_STR(want, errs);
	T_STR("", out);
	free(out);
	free(errs);
}

static void list_case(const char *file, const char *msg, const char *dir,
		      const char *savefs)
{
	struct sv_container *c = open_file(file);
	if (!c)
		return;
	uint32_t n = SV_NONE;
	T_INT(0, sv_resolve(c, dir, &n));
	struct walk w = {.c = c};
	struct kids k = {0};
	T_INT(-EIO, sv_readdir(c, n, 0, collect, &k));
	T_UINT(0, k.n);
	kids_made(c, n, &k);
	free(k.v);
	char line[SV_ERR_MAX + 300];
	snprintf(line, sizeof line, "cannot list %s: %s\n", dir, msg);
	char *text = meta_text(c, ".savefs/log");
	T_HAS(text, line);
	free(text);
	walk_dir(&w, SV_ROOT);
	T_INT(0, w.failed);
	sv_container_free(c);
	if (format)
		open_mem(file, 0, 0, NULL);
	cli_info_ok(file, savefs);
}

/* True if the "warnings" of c's /.savefs/info hold msg (else says so). */
static bool warned(struct sv_container *c, const char *msg)
{
	char *info = meta_text(c, ".savefs/info");
	json_t *j = info ? json_loads(info, 0, NULL) : NULL;
	json_t *v, *ws = json_object_get(j, "warnings");
	size_t i;
	bool found = false;
	json_array_foreach(ws, i, v)
		found |= json_is_string(v) && !strcmp(json_string_value(v), msg);
	if (!found)
		fprintf(stderr, "  not among the warnings: %s\n%s", msg, info);
	json_decref(j);
	free(info);
	return found;
}

/* The container in file warns each of warns[0..n) once open. */
static void warns_case(const char *file, char *const *warns, size_t n)
{
	struct sv_container *c = open_file(file);
	if (!c)
		return;
	for (size_t i = 0; i < n; i++)
		T_OK(warned(c, warns[i]));
	sv_container_free(c);
}

enum { OK_LOG, OK_WARNS, OK_QUIET };

static void ok_case(const char *file, const char *msg, const char *path, int kind,
		    const char *expect, size_t expect_len, const char *savefs)
{
	struct sv_container *c = open_file(file);
	if (!c)
		return;
	uint32_t n = SV_NONE;
	T_INT(0, sv_resolve(c, path, &n));
	struct sv_blob *b = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_content(c, n, &b, &err));
	if (b && expect) {
		T_UINT(expect_len, b->len);
		T_MEM(expect, b->data, b->len < expect_len ? b->len : expect_len);
	}
	sv_blob_unref(b);
	struct walk w = {.c = c};
	walk_dir(&w, SV_ROOT);
	T_INT(0, w.failed);
	char *log = meta_text(c, ".savefs/log");
	if (kind == OK_QUIET) {
		T_STR("", log);
	} else if (kind == OK_LOG) {
		/* A line "<time> <msg>". */
		char line[SV_ERR_MAX + 300];
		snprintf(line, sizeof line, " %s\n", msg);
		T_HAS(log, line);
	} else {
		T_OK(warned(c, msg));
	}
	free(log);
	sv_container_free(c);
	if (format)
		open_mem(file, 0, 0, NULL);

	cli_info_ok(file, savefs);
	char *argv2[] = {(char *)savefs, "cat", (char *)file, (char *)path, NULL};
	char *out, *errs;
	size_t len;
	T_INT(0, run(argv2, &out, &len, &errs));
	T_STR("", errs);
	if (expect) {
		T_UINT(expect_len, len);
		T_MEM(expect, out, len < expect_len ? len : expect_len);
	}
	free(out);
	free(errs);
}

/* Files that describe a variant rather than being one. */
static bool descriptive(const char *name)
{
	static const char *const ext[] = {".msg", ".how", ".expect", ".py", ".pyc", NULL};
	size_t k = strlen(name);
	for (size_t i = 0; ext[i]; i++) {
		size_t e = strlen(ext[i]);
		if (k >= e && !strcmp(name + k - e, ext[i]))
			return true;
	}
	return false;
}

/* The length of NAME in NAME.EXT. */
static size_t stem_len(const char *file)
{
	const char *dot = strrchr(file, '.');
	return dot && dot != file ? (size_t)(dot - file) : strlen(file);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the variant in container file `file` (NAME.EXT). */
static void variant(const char *dir, const char *file, const char *savefs)
{
	char path[4096], stem[4096], mpath[4200], hpath[4200], epath[4200];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	snprintf(stem, sizeof stem, "%s/%s", dir, file);
	char *dot = strrchr(stem, '.');
	if (dot && dot > strrchr(stem, '/') + 1)
		*dot = '\0';
	snprintf(mpath, sizeof mpath, "%s.msg", stem);
	snprintf(hpath, sizeof hpath, "%s.how", stem);
	snprintf(epath, sizeof epath, "%s.expect", stem);
	size_t expect_len = 0;
	char *msg = read_text(mpath, NULL), *how = read_text(hpath, NULL);
	char *expect = read_text(epath, &expect_len);
	int before = t_fails;
	fprintf(stderr, "%s\n", file);
	/* No NAME.msg: no message ("log is empty"). */
	if (!msg && how && strstr(how, "log is empty"))
		msg = strdup("");
	if (!msg || !how) {
		fprintf(stderr, "  missing %s or %s\n", mpath, hpath);
		T_OK(0);
		goto out;
	}
	chomp(msg);
	/* The first line says what happens; "also:" and "warns:" lines follow. */
	char *also[MAX_ALSO], *warns[MAX_ALSO];
	size_t nalso = 0, nwarns = 0;
	char *nl = strchr(how, '\n');
	if (nl) {
		*nl = '\0';
		for (char *save = NULL, *l = strtok_r(nl + 1, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save)) {
			chomp(l);
			if (!strncmp(l, "also: ", 6) && nalso < MAX_ALSO) {
				also[nalso++] = l + 6;
			} else if (!strncmp(l, "warns: ", 7) && nwarns < MAX_ALSO) {
				warns[nwarns++] = l + 7;
			} else if (*l) {
				fprintf(stderr, "  %s: cannot parse \"%s\"\n", hpath, l);
				T_OK(0);
			}
		}
	}
	chomp(how);
	int code, end = 0;
	char where[256], rest[64];
	if (nwarns && strncmp(how, "mounts: ", 8)) {
		fprintf(stderr, "  %s: \"warns:\" after a container that does not open\n", hpath);
		T_OK(0);
	} else if (nwarns) {
		warns_case(path, warns, nwarns);
	}
	if (sscanf(how, "fails: savefs info exits %d", &code) == 1) {
		header_case(path, msg, code, savefs);
	} else if (sscanf(how, "mounts: %255s reads EIO (savefs cat exits %d)", where,
			  &code) == 2) {
		entry_case(path, msg, where, code, also, nalso, savefs);
	} else if (sscanf(how, "mounts: %255s lists EIO%n", where, &end) == 1 && end &&
		   !how[end]) {
		list_case(path, msg, where, savefs);
	} else if (sscanf(how, "mounts: %255s reads OK, %63[^\n]", where, rest) == 2 &&
		   (!strcmp(rest, "log has the message") ||
		    !strcmp(rest, "info warns the message") || !strcmp(rest, "log is empty"))) {
		int kind = rest[0] == 'i' ? OK_WARNS : rest[4] == 'h' ? OK_LOG : OK_QUIET;
		if (kind != OK_QUIET && !*msg) {
			fprintf(stderr, "  %s is empty\n", mpath);
			T_OK(0);
		}
		ok_case(path, msg, where, kind, expect, expect_len, savefs);
	} else {
		fprintf(stderr, "  %s: cannot parse \"%s\"\n", hpath, how);
		T_OK(0);
	}
out:
	if (t_fails != before)
		fprintf(stderr, "  ^ %s FAILED\n", file);
	free(msg);
	free(how);
	free(expect);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_bad DIR SAVEFS\n");
		return 2;
	}
	const char *dir = argv[1], *savefs = argv[2];
	const char *base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	format = sv_format_find(base) ? base : NULL;
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return 1;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char p[4096];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.' || descriptive(e->d_name) || stat(p, &st) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **v = realloc(names, cap * sizeof *v);
			if (!v)
				return 1;
			names = v;
		}
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	if (!n) {
		fprintf(stderr, "%s: no variants\n", dir);
		free(names);
		return 77;
	}
	qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n; i++) {
		/* Two containers of one NAME would share NAME.msg and NAME.how. */
		for (size_t j = 0; j < i; j++)
			if (stem_len(names[i]) == stem_len(names[j]) &&
			    !strncmp(names[i], names[j], stem_len(names[i]))) {
				fprintf(stderr, "%s: %s has the same name\n", names[i], names[j]);
				T_OK(0);
			}
		variant(dir, names[i], savefs);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return t_done();
}
