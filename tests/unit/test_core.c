/*
 * test_core.c - the core alone, through a small in-memory format of the
 * test's own ("kv"): edits, commits and the guard, once per commit kind
 * and per source, with each kind's failure paths (a refusal, a failed
 * write, a lost lock, another writer).
 *
 * kv, as a file: lines "name=value"; each line is a file `name` holding
 * `value`.  As a directory: each member is a file of the same name and
 * content.  Four formats share the reader and differ in how edits land:
 *   kv-rewrite   SV_COMMIT_REWRITE: commit() writes every line anew
 *   kv-inplace   SV_COMMIT_IN_PLACE: commit_in_place() writes the file
 *                itself (pwrite + ftruncate)
 *   kv-append    SV_COMMIT_APPEND: one file, `log`, the whole container;
 *                a write at its end is appended at once, under kv's own
 *                lock (flock of the file made exclusive)
 *   kv-members   SV_COMMIT_MEMBERS (directories): each edited file
 *                replaces its member (sv_member_replace)
 * A value may not hold '!' (the check refuses it) and, in a file, no
 * newline.  `fail_write` makes the next write of the container fail with
 * EIO as a full disk would, after it has written part of what it meant to.
 */
#include "container.h"
#include "format.h"
#include "t.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static bool fail_write;

struct kv {
	size_t n;
	char **names;
	struct sv_buf *vals;
	struct stat *mst; /* directories: each member as read */
};

static void kv_free(struct kv *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++) {
		free(k->names[i]);
		sv_buf_fini(&k->vals[i]);
	}
	free(k->names);
	free(k->vals);
	free(k->mst);
	free(k);
}

static int kv_add(struct kv *k, const char *name, size_t nlen, const void *v, size_t vlen)
{
	char **names = realloc(k->names, (k->n + 1) * sizeof *names);
	if (names)
		k->names = names;
	struct sv_buf *vals = realloc(k->vals, (k->n + 1) * sizeof *vals);
	if (vals)
		k->vals = vals;
	struct stat *mst = realloc(k->mst, (k->n + 1) * sizeof *mst);
	if (mst)
		k->mst = mst;
	if (!names || !vals || !mst || !(k->names[k->n] = strndup(name, nlen)))
		return -ENOMEM;
	sv_buf_init(&k->vals[k->n]);
	memset(&k->mst[k->n], 0, sizeof *k->mst);
	if (sv_buf_add(&k->vals[k->n], v, vlen)) {
		free(k->names[k->n]);
		return -ENOMEM;
	}
	k->n++;
	return 0;
}

static int collect(void *arg, const char *name)
{
	struct kv *k = arg;
	return name[0] == '.' ? 0 : kv_add(k, name, strlen(name), "", 0);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_append(struct sv_container *c);
static bool is_index(struct sv_container *c);
/* Flags keys/ has besides SV_N_DIR | SV_N_INDEXDIR. */
static uint32_t kvi_flags;

static int kv_open(struct sv_container *c, struct sv_err *err)
{
	struct kv *k = calloc(1, sizeof *k);
	if (!k)
		return sv_err_set(err, -ENOMEM, "out of memory");
	sv_container_set_priv(c, k);
	int rc = 0;
	if (sv_container_is_dir(c)) {
		rc = sv_member_list(c, collect, k, err);
		if (!rc)
			qsort(k->names, k->n, sizeof *k->names, by_name);
		for (size_t i = 0; !rc && i < k->n; i++) {
			rc = sv_member_stat(c, k->names[i], &k->mst[i], err);
			if (!rc)
				rc = sv_member_read_all(c, k->names[i], 1 << 20, &k->vals[i], err);
		}
	} else {
		size_t size = (size_t)sv_container_size(c);
		char *p = malloc(size + 1);
		rc = p ? sv_container_pread(c, 0, p, size, err) : -ENOMEM;
		if (!rc && is_append(c))
			rc = kv_add(k, "log", 3, p, size);
		for (size_t at = 0, line = 1; !rc && !is_append(c) && at < size; line++) {
			char *nl = memchr(p + at, '\n', size - at);
			size_t end = nl ? (size_t)(nl - p) : size;
			char *eq = memchr(p + at, '=', end - at);
			if (!eq)
				rc = sv_err_set(err, -EBADMSG, "kv: line %zu: no '='", line);
			else
				rc = kv_add(k, p + at, (size_t)(eq - (p + at)), eq + 1,
					    end - (size_t)(eq + 1 - p));
			at = end + 1;
		}
		free(p);
	}
	uint32_t flags = is_append(c) ? SV_N_DIRECT : 0;
	if (!rc && is_index(c))
		return sv_node_add(c, SV_ROOT, "keys", SV_N_DIR | SV_N_INDEXDIR | kvi_flags, 0,
				   UINT64_MAX) ==
				       SV_NONE
			       ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
	for (size_t i = 0; !rc && i < k->n; i++)
		if (sv_node_add(c, SV_ROOT, k->names[i], flags, k->vals[i].len, i) == SV_NONE)
			rc = sv_err_set(err, -ENOMEM, "out of memory");
	return rc;
}

static void kv_close(struct sv_container *c)
{
	kv_free(sv_container_priv(c));
}

static int kv_load(struct sv_container *c, uint32_t node, struct sv_blob **out,
		   struct sv_err *err)
{
	struct kv *k = sv_container_priv(c);
	uint64_t i = sv_node(c, node)->key;
	*out = sv_blob_dup(k->vals[i].p, k->vals[i].len);
	return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
}

static int kv_check(struct sv_container *c, uint32_t node, const uint8_t *p, size_t len,
		    struct sv_err *err)
{
	if (memchr(p, '!', len))
		return sv_err_set(err, -EINVAL, "kv: a value may not hold '!'");
	if (!sv_container_is_dir(c) && memchr(p, '\n', len))
		return sv_err_set(err, -EINVAL, "kv: a value in a file may not hold a newline");
	return 0;
}

/* The container's new bytes: every line, edited or stored. */
static int image(struct sv_container *c, struct sv_buf *out)
{
	struct kv *k = sv_container_priv(c);
	for (uint32_t n = 1; n < sv_node_count(c); n++) {
		if (!sv_node_in_commit(c, n))
			continue;
		const struct sv_node *node = sv_node(c, n);
		const struct sv_buf *e = sv_node_edit(c, n);
		const struct sv_buf *v = e ? e : &k->vals[node->key];
		if (sv_buf_printf(out, "%s=", node->name) || sv_buf_add(out, v->p, v->len) ||
		    sv_buf_add(out, "\n", 1))
			return -ENOMEM;
	}
	return 0;
}

/* Writes p[0..n) at off of fd, or (fail_write) half of it and EIO. */
static int put(int fd, const uint8_t *p, size_t n, off_t off, struct sv_err *err)
{
	size_t want = fail_write ? n / 2 : n;
	if (pwrite(fd, p, want, off) != (ssize_t)want)
		return sv_err_set(err, -errno, "kv: write: %s", strerror(errno));
	if (fail_write) {
		fail_write = false;
		return sv_err_set(err, -EIO, "kv: write: no space left (a test's full disk)");
	}
	return 0;
}

static int kv_commit(struct sv_container *c, int fd, struct sv_err *err)
{
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = image(c, &b) ? sv_err_set(err, -ENOMEM, "out of memory")
			      : put(fd, b.p, b.len, 0, err);
	sv_buf_fini(&b);
	return rc;
}

static int kv_commit_in_place(struct sv_container *c, int fd, struct sv_err *err)
{
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = image(c, &b) ? sv_err_set(err, -ENOMEM, "out of memory")
			      : put(fd, b.p, b.len, 0, err);
	if (!rc && ftruncate(fd, (off_t)b.len))
		rc = sv_err_set(err, -errno, "kv: %s", strerror(errno));
	sv_buf_fini(&b);
	return rc;
}

static int kv_commit_members(struct sv_container *c, int fd, struct sv_err *err)
{
	struct kv *k = sv_container_priv(c);
	for (uint32_t n = 1; n < sv_node_count(c); n++) {
		const struct sv_buf *e = sv_node_edit(c, n);
		if (!e || !sv_node_in_commit(c, n))
			continue;
		if (fail_write) {
			fail_write = false;
			return sv_err_set(err, -EIO, "kv: write: no space left (a test's full disk)");
		}
		const struct sv_node *node = sv_node(c, n);
		bool known = (sv_node_state(c, n) & SV_S_NEW) == 0;
		int rc = sv_member_replace(c, node->name, ".kv-", e->p, e->len,
					   known ? &k->mst[node->key] : NULL, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int kv_create(struct sv_container *c, uint32_t parent, const char *name,
		     struct sv_err *err)
{
	return name[0] == '.' || strchr(name, '~') ? -ENOENT : 0;
}

static int kv_write(struct sv_container *c, uint32_t node, uint64_t off, const uint8_t *p,
		    size_t n, struct sv_err *err)
{
	struct kv *k = sv_container_priv(c);
	int fd = sv_container_fd(c);
	if (off != k->vals[0].len)
		return sv_err_set(err, -EINVAL, "kv: a log takes writes at its end only");
	if (memchr(p, '!', n))
		return sv_err_set(err, -EINVAL, "kv: a value may not hold '!'");
	if (flock(fd, LOCK_EX | LOCK_NB))
		return sv_err_set(err, -EBUSY, "kv: the log is locked by another program");
	int rc = put(fd, p, n, (off_t)off, err);
	if (!rc && sv_buf_add(&k->vals[0], p, n))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (rc && ftruncate(fd, (off_t)off))
		rc = sv_err_set(err, rc, "kv: the write failed and could not be undone");
	flock(fd, LOCK_SH | LOCK_NB);
	if (!rc) {
		sv_node(c, node)->size = k->vals[0].len;
		sv_node_touch(c, node);
	}
	return rc;
}

/* A kv format: its edits landing as kind_file / kind_dir, with the calls
 * given (edits' fields), and other groups after them. */
#define KV(fmt, kind_file, kind_dir, ...)                                                    \
	static const struct sv_format_edits fmt##_edits = {                                  \
		.commit_file = kind_file, .commit_dir = kind_dir, .check = kv_check,           \
		.create = kv_create, __VA_ARGS__};                                             \
	static const struct sv_format fmt = {                                                \
		.name = "kv", .description = "key=value lines (a test's)", .probe = never,   \
		.probe_dir = always_dir, .open = kv_open, .close = kv_close, .load = kv_load,  \
		.edits = &fmt##_edits, KV_GROUPS_##fmt}

static int never(const uint8_t *head, size_t n)
{
	return 0;
}

static int always_dir(struct sv_container *c)
{
	return 1;
}

static const struct sv_format_live kv_live = {.write = kv_write};
#define KV_GROUPS_kv_rewrite
#define KV_GROUPS_kv_inplace
#define KV_GROUPS_kv_append .live = &kv_live
#define KV_GROUPS_kv_members
KV(kv_rewrite, SV_COMMIT_REWRITE, SV_COMMIT_NONE, .commit = kv_commit);
KV(kv_inplace, SV_COMMIT_IN_PLACE, SV_COMMIT_NONE, .commit_in_place = kv_commit_in_place);
KV(kv_append, SV_COMMIT_APPEND, SV_COMMIT_NONE);
KV(kv_members, SV_COMMIT_NONE, SV_COMMIT_MEMBERS, .commit_in_place = kv_commit_members);

/* kv-index: the same lines under one directory, keys/, listed from kv's
 * own table (SV_N_INDEXDIR): an entry is a node only while looked up. */

static int kvi_list(struct sv_container *c, uint32_t dir, uint64_t pos, char name[256],
		    bool *is_dir, uint64_t *at)
{
	struct kv *k = sv_container_priv(c);
	if (pos >= k->n)
		return 1;
	snprintf(name, 256, "%s", k->names[pos]);
	*is_dir = false;
	*at = pos;
	return 0;
}

static int kvi_lookup(struct sv_container *c, uint32_t dir, const char *name, struct sv_err *err)
{
	struct kv *k = sv_container_priv(c);
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(k->names[i], name)) {
			uint32_t n = sv_node_add(c, dir, name, 0, k->vals[i].len, i);
			if (n == SV_NONE)
				return sv_err_set(err, -ENOMEM, "out of memory");
			sv_node_listed(c, n, i);
			return 0;
		}
	return -ENOENT;
}

/* Every line, each from its edit where keys/ holds one (nodes that are
 * not there are lines as stored). */
static int kvi_commit(struct sv_container *c, int fd, struct sv_err *err)
{
	struct kv *k = sv_container_priv(c);
	const struct sv_buf **edits = calloc(k->n ? k->n : 1, sizeof *edits);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = edits ? 0 : -ENOMEM;
	for (uint32_t n = 1; !rc && n < sv_node_count(c); n++)
		if (sv_node_in_commit(c, n) && sv_node_edit(c, n) && sv_node(c, n)->key < k->n)
			edits[sv_node(c, n)->key] = sv_node_edit(c, n);
	for (size_t i = 0; !rc && i < k->n; i++) {
		const struct sv_buf *v = edits[i] ? edits[i] : &k->vals[i];
		if (sv_buf_printf(&b, "%s=", k->names[i]) || sv_buf_add(&b, v->p, v->len) ||
		    sv_buf_add(&b, "\n", 1))
			rc = -ENOMEM;
	}
	rc = rc ? sv_err_set(err, rc, "out of memory") : put(fd, b.p, b.len, 0, err);
	sv_buf_fini(&b);
	free(edits);
	return rc;
}

static bool is_append(struct sv_container *c)
{
	return sv_container_format(c) == &kv_append;
}

static const struct sv_format_dirs kv_index_dirs = {.list = kvi_list, .lookup = kvi_lookup};
#define KV_GROUPS_kv_index .dirs = &kv_index_dirs
KV(kv_index, SV_COMMIT_REWRITE, SV_COMMIT_NONE, .commit = kvi_commit);

static bool is_index(struct sv_container *c)
{
	return sv_container_format(c) == &kv_index;
}

/* ---- helpers -------------------------------------------------------------------- */

static char dir[] = "/tmp/savefs-test-core-XXXXXX";

static char *at(const char *name)
{
	static char p[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
	return p[k];
}

static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_OK(fd >= 0);
	T_INT((ssize_t)strlen(text), write(fd, text, strlen(text)));
	close(fd);
}

/* b made to hold n lines "k<i>=v<i>" (k0000=v0, ...). */
static void kv_lines(struct sv_buf *b, int n)
{
	sv_buf_init(b);
	for (int i = 0; i < n; i++)
		sv_buf_printf(b, "k%04d=v%d\n", i, i);
}

/* A file of b's bytes at path. */
static void put_buf(const char *path, const struct sv_buf *b)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_OK(fd >= 0);
	T_INT((ssize_t)b->len, write(fd, b->p, b->len));
	close(fd);
}

/* The file's bytes (static buffer). */
static const char *slurp(const char *path)
{
	static char b[4096];
	int fd = open(path, O_RDONLY);
	ssize_t k = fd < 0 ? -1 : read(fd, b, sizeof b - 1);
	if (fd >= 0)
		close(fd);
	b[k < 0 ? 0 : k] = '\0';
	return b;
}

static struct sv_container *open_as(const char *path, const struct sv_format *f)
{
	struct sv_opts o;
	sv_opts_init(&o);
	struct sv_container *c = NULL;
	struct sv_err err;
	int rc = sv_container_open_as(path, f, &o, &c, &err);
	if (rc)
		fprintf(stderr, "  (open %s: %s)\n", path, err.msg);
	T_INT(0, rc);
	return c;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The node's content as the core serves it (static buffer). */
static const char *value(struct sv_container *c, const char *path)
{
	static char b[4096];
	char *t = text_of(c, path, NULL);
	snprintf(b, sizeof b, "%s", t);
	free(t);
	return b;
}

static int edit(struct sv_container *c, const char *path, const char *text, struct sv_err *err)
{
	return put_text(c, path, text, strlen(text), err);
}

static struct stat stat_of(const char *path)
{
	struct stat st;
	memset(&st, 0, sizeof st);
	T_INT(0, stat(path, &st));
	return st;
}

/* ---- the kinds that commit a file ----------------------------------------------------- */

/* REWRITE and IN_PLACE: an edit lands, a refusal, a failed write, a lock
 * another program holds, and another writer's change since the read. */
static void file_kind(const struct sv_format *f, bool new_inode)
{
	const char *path = at(f == &kv_rewrite ? "rewrite.kv" : "inplace.kv");
	put_file(path, "a=1\nb=2\n");
	struct sv_container *c = open_as(path, f);
	if (!c)
		return;
	struct sv_err err;
	T_INT(f == &kv_rewrite ? SV_COMMIT_REWRITE : SV_COMMIT_IN_PLACE,
	      sv_container_commit_kind(c));
	T_STR("1", value(c, "a"));

	/* An edit lands; the tree serves it; identical bytes commit nothing. */
	struct stat before = stat_of(path);
	T_INT(0, edit(c, "a", "one", &err));
	T_INT(0, sv_commit(c, NULL, NULL, &err));
	T_STR("a=one\nb=2\n", slurp(path));
	T_STR("one", value(c, "a"));
	struct stat after = stat_of(path);
	T_OK(new_inode ? after.st_ino != before.st_ino : after.st_ino == before.st_ino);
	T_INT(0, edit(c, "b", "2", &err));
	T_INT(0, sv_commit(c, NULL, NULL, &err));
	T_UINT((uint64_t)after.st_ino, (uint64_t)stat_of(path).st_ino);
	T_STR("a=one\nb=2\n", slurp(path));

	/* A refusal: EINVAL with the reason, nothing written, the edit gone. */
	uint32_t b = node_of(c, "b");
	uint32_t drops = sv_drops(c, b);
	T_INT(0, edit(c, "b", "no!", &err));
	T_INT(-EINVAL, sv_commit(c, NULL, NULL, &err));
	T_HAS(err.msg, "kv: a value may not hold '!'");
	T_STR("a=one\nb=2\n", slurp(path));
	T_STR("2", value(c, "b"));
	T_UINT(drops + 1, sv_drops(c, b));
	T_OK(log_has(c, "b: kv: a value may not hold '!'"));

	/* A failed write: the error, the container as it was, the edit gone
	 * (no temporary file left beside a rewritten one). */
	T_INT(0, edit(c, "a", "uno", &err));
	fail_write = true;
	T_INT(-EIO, sv_commit(c, NULL, NULL, &err));
	T_HAS(err.msg, "no space left");
	if (f == &kv_rewrite) {
		T_STR("a=one\nb=2\n", slurp(path));
		T_STR("one", value(c, "a"));
	} else {
		/* In place, half of the new bytes landed (the fake is not
		 * crash-safe, a game's writer is): the core read the file
		 * again, so the tree shows what it holds, not a mix. */
		T_STR("a=uno\nb=2\n", slurp(path));
		T_STR("uno", value(c, "a"));
		T_OK(log_has(c, "was read again after the failed commit"));
	}
	DIR *d = opendir(dir);
	struct dirent *e;
	int leftovers = 0;
	while (d && (e = readdir(d)))
		leftovers += strstr(e->d_name, ".savefs-") != NULL;
	if (d)
		closedir(d);
	T_INT(0, leftovers);
	sv_container_free(c);

	/* A lock another program holds (flock, shared beside the mount's
	 * claim): the commit waits a while, then EBUSY; nothing written. */
	put_file(path, "a=1\nb=2\n");
	c = open_as(path, f);
	if (!c)
		return;
	int other = open(path, O_RDONLY);
	T_INT(0, flock(other, LOCK_SH));
	T_INT(0, edit(c, "a", "x", &err));
	T_INT(-EBUSY, sv_commit(c, NULL, NULL, &err));
	T_HAS(err.msg, "is locked by another program: not written, the edit is dropped");
	T_STR("a=1\nb=2\n", slurp(path));
	close(other);
	/* Another writer changed the file since it was read. */
	T_INT(0, edit(c, "a", "y", &err));
	put_file(path, "a=1\nb=2\nc=3\n");
	T_INT(-EBUSY, sv_commit(c, NULL, NULL, &err));
	T_HAS(err.msg, "was changed by another program since it was read");
	T_STR("a=1\nb=2\nc=3\n", slurp(path));
	sv_container_free(c);
	/* ... or put another file in its place. */
	put_file(path, "a=1\n");
	c = open_as(path, f);
	if (!c)
		return;
	T_INT(0, edit(c, "a", "z", &err));
	put_file(at("other.kv"), "a=other\n");
	T_INT(0, rename(at("other.kv"), path));
	T_INT(-EBUSY, sv_commit(c, NULL, NULL, &err));
	T_HAS(err.msg, "was replaced by another file since it was read");
	T_STR("a=other\n", slurp(path));
	sv_container_free(c);
}

/* APPEND: a write lands at once; a refusal; a failed write undone; the
 * format's own lock held by another program. */
static void append_kind(void)
{
	const char *path = at("append.kv");
	put_file(path, "one\n");
	struct sv_container *c = open_as(path, &kv_append);
	if (!c)
		return;
	struct sv_err err;
	T_INT(SV_COMMIT_APPEND, sv_container_commit_kind(c));
	uint32_t n = node_of(c, "log");
	T_INT(0, sv_write(c, n, 4, "two\n", 4, &err));
	T_STR("one\ntwo\n", slurp(path));
	T_STR("one\ntwo\n", value(c, "log"));
	struct sv_stat st;
	T_INT(0, sv_stat(c, n, &st));
	T_UINT(8, st.size);
	/* Not at the end, or with a '!': refused, nothing written. */
	T_INT(-EINVAL, sv_write(c, n, 0, "x", 1, &err));
	T_STR("kv: a log takes writes at its end only", err.msg);
	T_INT(-EINVAL, sv_write(c, n, 8, "no!\n", 4, &err));
	T_STR("one\ntwo\n", slurp(path));
	T_OK(log_has(c, "refused log: kv: a value may not hold '!'"));
	/* A failed write is undone. */
	fail_write = true;
	T_INT(-EIO, sv_write(c, n, 8, "three\n", 6, &err));
	T_STR("one\ntwo\n", slurp(path));
	/* Its lock, held by another program. */
	int other = open(path, O_RDONLY);
	T_INT(0, flock(other, LOCK_SH));
	T_INT(-EBUSY, sv_write(c, n, 8, "four\n", 5, &err));
	T_STR("kv: the log is locked by another program", err.msg);
	T_STR("one\ntwo\n", slurp(path));
	close(other);
	T_INT(0, sv_write(c, n, 8, "five\n", 5, &err));
	T_STR("one\ntwo\nfive\n", slurp(path));
	/* An edit that is no direct write (a new file) cannot land in an
	 * append-only container: refused at its commit, before anything is
	 * taken for one (a snapshot of the tree was taken and leaked there
	 * before), the file as it was. */
	uint32_t x;
	T_INT(0, sv_create(c, SV_ROOT, "x", 0644, &x, &err));
	T_INT(-EROFS, sv_flush(c, x, NULL, NULL, &err));
	T_STR("edits of this container land as they are written", err.msg);
	T_STR("one\ntwo\nfive\n", slurp(path));
	sv_container_free(c);
}

/* ---- the directory source ---------------------------------------------------------- */

static void members_kind(void)
{
	const char *d = at("members");
	T_INT(0, mkdir(d, 0755));
	char p[300];
	snprintf(p, sizeof p, "%s/a", d);
	put_file(p, "1");
	snprintf(p, sizeof p, "%s/b", d);
	put_file(p, "2");
	struct sv_container *c = open_as(d, &kv_members);
	if (!c)
		return;
	struct sv_err err;
	T_OK(sv_container_is_dir(c));
	T_INT(SV_COMMIT_MEMBERS, sv_container_commit_kind(c));
	T_STR("2", value(c, "b"));
	/* A directory has no bytes of its own. */
	uint8_t x;
	T_INT(-EBADMSG, sv_container_pread(c, 0, &x, 1, &err));
	T_STR("a directory has no bytes of its own", err.msg);
	/* An edit replaces its member; the other stays the same file. */
	snprintf(p, sizeof p, "%s/b", d);
	struct stat b0 = stat_of(p);
	T_INT(0, edit(c, "a", "one", &err));
	T_INT(0, sv_commit(c, NULL, NULL, &err));
	snprintf(p, sizeof p, "%s/a", d);
	T_STR("one", slurp(p));
	snprintf(p, sizeof p, "%s/b", d);
	T_UINT((uint64_t)b0.st_ino, (uint64_t)stat_of(p).st_ino);
	T_STR("one", value(c, "a"));
	/* A refusal. */
	T_INT(0, edit(c, "b", "no!", &err));
	T_INT(-EINVAL, sv_commit(c, NULL, NULL, &err));
	T_STR("2", slurp(p));
	/* A failed write. */
	T_INT(0, edit(c, "b", "two", &err));
	fail_write = true;
	T_INT(-EIO, sv_commit(c, NULL, NULL, &err));
	T_STR("2", slurp(p));
	T_STR("2", value(c, "b"));
	/* Another writer replaced the member since it was read: the swap is
	 * undone, their file stays. */
	T_INT(0, edit(c, "b", "mine", &err));
	char q[300];
	snprintf(q, sizeof q, "%s/.theirs", d);
	put_file(q, "theirs");
	T_INT(0, rename(q, p));
	T_INT(-EBUSY, sv_commit(c, NULL, NULL, &err));
	T_HAS(err.msg, "b was replaced by another program since it was read");
	T_STR("theirs", slurp(p));
	/* The directory's lock, held by another program. */
	sv_container_free(c);
	c = open_as(d, &kv_members);
	if (!c)
		return;
	int other = open(d, O_RDONLY | O_DIRECTORY);
	T_INT(0, flock(other, LOCK_SH));
	T_INT(0, edit(c, "a", "held", &err));
	T_INT(-EBUSY, sv_commit(c, NULL, NULL, &err));
	T_HAS(err.msg, "is locked by another program");
	snprintf(p, sizeof p, "%s/a", d);
	T_STR("one", slurp(p));
	close(other);
	/* A new file becomes a new member. */
	uint32_t n;
	T_INT(0, sv_create(c, SV_ROOT, "c", 0644, &n, &err));
	T_INT(0, sv_write(c, n, 0, "3", 1, &err));
	T_INT(0, sv_commit(c, NULL, NULL, &err));
	snprintf(p, sizeof p, "%s/c", d);
	T_STR("3", slurp(p));
	sv_container_free(c);
	/* A file source is not a directory: no members. */
	const char *f = at("plain.kv");
	put_file(f, "a=1\n");
	c = open_as(f, &kv_rewrite);
	if (c) {
		struct stat st;
		T_INT(-ENOTDIR, sv_member_stat(c, "a", &st, &err));
		T_STR("a: the container is not a directory", err.msg);
		sv_container_free(c);
	}
}

/* ---- index directories: entries that are nodes only while held ----------------------- */

struct seen {
	size_t n, unmade;
	uint32_t node_of_k0005;
	char first[32], last[32];
};

static int seen_add(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct seen *s = arg;
	if (!s->n++)
		snprintf(s->first, sizeof s->first, "%s", name);
	snprintf(s->last, sizeof s->last, "%s", name);
	s->unmade += st->unmade;
	if (!strcmp(name, "k0005"))
		s->node_of_k0005 = st->unmade ? SV_NONE : st->node;
	T_OK(!st->dir);
	return 0;
}

static struct seen seen_of(struct sv_container *c)
{
	struct seen s = {0};
	T_INT(0, sv_readdir(c, node_of(c, "keys"), 0, seen_add, &s));
	return s;
}

/* A kv index container holding b's lines, written at path. */
static struct sv_container *kv_index_of(const char *path, const struct sv_buf *b)
{
	put_buf(path, b);
	return open_as(path, &kv_index);
}

static void index_dirs(void)
{
	const char *path = at("index.kv");
	struct sv_buf b;
	kv_lines(&b, 1000);
	struct sv_container *c = kv_index_of(path, &b);
	if (!c) {
		sv_buf_fini(&b);
		return;
	}
	struct sv_err err;
	uint32_t keys = node_of(c, "keys");
	uint32_t base = sv_node_count(c);
	T_OK(base < 8);
	/* A listing of 1,000 entries makes no node. */
	struct seen s = seen_of(c);
	T_UINT(1000, s.n);
	T_UINT(1000, s.unmade);
	T_STR("k0000", s.first);
	T_STR("k0999", s.last);
	T_UINT(base, sv_node_count(c));
	struct sv_stat st;
	T_INT(0, sv_stat(c, keys, &st));
	T_UINT(1, st.nlink);

	/* A lookup makes one; the listing then gives its number; a second
	 * lookup gives the same number while it is held. */
	uint32_t n5, again, n7;
	T_INT(0, sv_lookup_held(c, keys, "k0005", &n5));
	T_UINT(base + 1, sv_node_count(c));
	T_STR("v5", value(c, "keys/k0005"));
	s = seen_of(c);
	T_UINT(999, s.unmade);
	T_UINT(n5, s.node_of_k0005);
	T_INT(0, sv_lookup_held(c, keys, "k0005", &again));
	T_UINT(n5, again);
	T_INT(-ENOENT, sv_lookup_held(c, keys, "k1000", &again));
	sv_forget(c, n5, 1);
	T_INT(0, sv_stat(c, n5, &st));          /* held once more */
	T_INT(0, sv_lookup_held(c, keys, "k0005", &again));
	T_UINT(n5, again);
	sv_forget(c, n5, 2);                      /* the last holds */
	T_INT(-ESTALE, sv_stat(c, n5, &st));
	/* The number is given again, to another entry, whose bytes are its
	 * own (nothing cached of the old node is taken for it). */
	T_INT(0, sv_lookup_held(c, keys, "k0007", &n7));
	T_UINT(n5, n7);
	T_STR("v7", value(c, "keys/k0007"));
	sv_forget(c, n7, 1);
	/* Looked up and forgotten one by one, 1,000 entries cost one node. */
	for (int i = 0; i < 1000; i++) {
		char name[16];
		uint32_t n;
		snprintf(name, sizeof name, "k%04d", i);
		T_INT(0, sv_lookup_held(c, keys, name, &n));
		sv_forget(c, n, 1);
	}
	T_UINT(base + 1, sv_node_count(c));
	/* A name an entry has is taken, whether the entry is a node or not
	 * (a create took it before). */
	uint32_t made = SV_NONE;
	sv_err_clear(&err);
	T_INT(-EEXIST, sv_create(c, keys, "k0010", 0644, &made, &err));
	T_UINT(SV_NONE, made);
	/* An open file is not let go at its forget. */
	uint32_t open_one;
	T_INT(0, sv_lookup_held(c, keys, "k0009", &open_one));
	T_INT(0, sv_open(c, open_one));
	sv_forget(c, open_one, 1);
	T_INT(0, sv_stat(c, open_one, &st));
	sv_release(c, open_one);

	/* A commit while entries are held, edited and forgotten: the held
	 * one keeps its number and reads its bytes, the edited one lands,
	 * the forgotten one is not made again. */
	uint32_t n1, n2, n3;
	T_INT(0, sv_lookup_held(c, keys, "k0001", &n1));
	T_INT(0, sv_lookup_held(c, keys, "k0002", &n2));
	T_INT(0, sv_lookup_held(c, keys, "k0003", &n3));
	sv_forget(c, n3, 1);
	T_INT(-ESTALE, sv_stat(c, n3, &st));
	uint32_t count = sv_node_count(c);
	T_INT(0, edit(c, "keys/k0002", "two", &err));
	T_INT(0, sv_commit(c, NULL, NULL, &err));
	T_HAS(slurp(path), "k0001=v1\nk0002=two\nk0003=v3\n");
	T_INT(0, sv_lookup_held(c, keys, "k0001", &again));
	T_UINT(n1, again);
	T_STR("v1", value(c, "keys/k0001"));
	T_INT(0, sv_lookup_held(c, keys, "k0002", &again));
	T_UINT(n2, again);
	T_STR("two", value(c, "keys/k0002"));
	T_INT(-ESTALE, sv_stat(c, n3, &st));
	T_OK(sv_node_count(c) <= count + 1);
	s = seen_of(c);
	T_UINT(1000, s.n);
	T_UINT(998, s.unmade);
	/* After the commit, a forget lets the edited entry go too. */
	sv_forget(c, n2, 2);
	T_INT(-ESTALE, sv_stat(c, n2, &st));
	T_STR("two", value(c, "keys/k0002"));
	sv_container_free(c);
	sv_buf_fini(&b);
}

/* "read_ahead" in /.savefs/info: the files the worker decoded. */
static long read_ahead_of(struct sv_container *c)
{
	const char *info = value(c, ".savefs/info");
	const char *p = info ? strstr(info, "\"read_ahead\": ") : NULL;
	return p ? atol(p + 14) : -1;
}

/* Looks up and reads entry k<i> of the read-ahead test's index directory
 * (held once): 6,000 bytes, the first 'a' + i. */
static uint32_t read_entry(struct sv_container *c, uint32_t keys, int i)
{
	char name[16];
	uint32_t n = SV_NONE;
	snprintf(name, sizeof name, "k%04d", i);
	T_INT(0, sv_lookup_held(c, keys, name, &n));
	struct sv_blob *v = NULL;
	T_INT(0, sv_content(c, n, &v, NULL));
	T_UINT(6000, v ? v->len : 0);
	if (v && v->len == 6000)
		T_INT('a' + i, v->data[0]);
	sv_blob_unref(v);
	return n;
}

/*
 * Read-ahead in an index directory: a reader taking its entries in listing
 * order (each a lookup, a read and, later, a forget, as the kernel does)
 * has, from its second, the next eight decoded ahead by the worker, which makes their nodes
 * as it goes (the listing made none); the reader then finds those nodes
 * and their bytes in the cache.  The bytes are the entries' own.
 */
static void index_readahead(void)
{
	const char *path = at("ahead.kv");
	struct sv_buf b;
	sv_buf_init(&b);
	for (int i = 0; i < 100; i++) {
		sv_buf_printf(&b, "k%04d=", i);
		for (int k = 0; k < 6000; k++)
			sv_buf_add(&b, &"abcdefghijklmnopqrstuvwxyz"[(i + k / 100) % 26], 1);
		sv_buf_add(&b, "\n", 1);
	}
	struct sv_container *c = kv_index_of(path, &b);
	if (!c) {
		sv_buf_fini(&b);
		return;
	}
	uint32_t keys = node_of(c, "keys"), base = sv_node_count(c);
	uint32_t seen[12];
	for (int i = 0; i < 2; i++) {
		seen[i] = read_entry(c, keys, i);
		sv_forget(c, seen[i], 1);
	}
	/* Waited for up to 10 s (a busy machine cannot fail this). */
	long ahead = read_ahead_of(c);
	for (int tries = 0; tries < 1000 && ahead >= 0 && ahead < 8; tries++) {
		usleep(10000);
		ahead = read_ahead_of(c);
	}
	T_INT(8, ahead);
	/* k0002 .. k0009: eight nodes made ahead (k0000's number given
	 * again; k0001's too unless the worker began before its forget), and
	 * cache hits. */
	T_OK(sv_node_count(c) <= base + 9);
	struct sv_cache_stats before, after;
	sv_container_cache_stats(c, &before);
	for (int i = 2; i < 10; i++)
		seen[i] = read_entry(c, keys, i);
	sv_container_cache_stats(c, &after);
	T_UINT(before.hits + 8, after.hits);
	for (int i = 2; i < 10; i++)
		sv_forget(c, seen[i], 1);
	sv_container_free(c);
	sv_buf_fini(&b);
}

/* A listing as the kernel takes it with readdirplus: an entry given with
 * its node is held (SV_DIR_HELD); one without, a name. */
struct plus_seen {
	size_t n, unmade;
	uint32_t node_of_k0005;
};

static int plus_add(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct plus_seen *s = arg;
	s->n++;
	s->unmade += st->unmade;
	if (!strcmp(name, "k0005"))
		s->node_of_k0005 = st->unmade ? SV_NONE : st->node;
	return st->unmade ? 0 : SV_DIR_HELD;
}

/* A file of n kv lines at path, opened with a 1 MiB cache (a budget of
 * 4,096 nodes), its keys/ declared with `flags` too; NULL if it did not
 * open. */
static struct sv_container *kv_small_cache(const char *path, int n, uint32_t flags)
{
	struct sv_buf b;
	kv_lines(&b, n);
	put_buf(path, &b);
	sv_buf_fini(&b);
	struct sv_opts o;
	sv_opts_init(&o);
	o.cache_cap = 1 << 20;
	struct sv_container *c = NULL;
	struct sv_err err;
	kvi_flags = flags;
	T_INT(0, sv_container_open_as(path, &kv_index, &o, &c, &err));
	kvi_flags = 0;
	return c;
}

/* A directory whose entries are cheap to make (SV_N_LIST_AS_NODES): a listing
 * that gives the client nodes makes them while the container has room
 * (4,096 nodes at a 1 MiB cache), each held once, and gives names alone
 * beyond; a plain listing makes none; a forgotten entry's room is used
 * by the next listing.  A directory without the flag gives names. */
static void listed_nodes(void)
{
	const char *path = at("listed.kv");
	struct sv_container *c = kv_small_cache(path, 5000, SV_N_LIST_AS_NODES);
	if (!c)
		return;
	uint32_t keys = node_of(c, "keys"), base = sv_node_count(c);
	struct seen s = seen_of(c);
	T_UINT(5000, s.unmade);
	T_UINT(base, sv_node_count(c));
	struct plus_seen p = {0};
	T_INT(0, sv_readdir_nodes(c, keys, 0, plus_add, &p));
	T_UINT(5000, p.n);
	T_UINT(4096, sv_node_count(c));
	T_UINT(5000 - (4096 - base), p.unmade);
	/* Made with the format's size, held once: a forget lets it go. */
	struct sv_stat st;
	uint32_t n5 = p.node_of_k0005;
	T_OK(n5 != SV_NONE);
	T_INT(0, sv_stat(c, n5, &st));
	T_UINT(2, st.size);
	T_STR("v5", value(c, "keys/k0005"));
	sv_forget(c, n5, 1);
	T_INT(-ESTALE, sv_stat(c, n5, &st));
	/* Its room goes to the next listing's first entry that is no node:
	 * k0005 again, under the number it had. */
	p = (struct plus_seen){0};
	T_INT(0, sv_readdir_nodes(c, keys, 0, plus_add, &p));
	T_UINT(5000 - (4096 - base), p.unmade);
	T_UINT(n5, p.node_of_k0005);
	T_UINT(4096, sv_node_count(c));
	sv_container_free(c);

	/* Without the flag: names. */
	c = kv_small_cache(path, 5000, 0);
	if (!c)
		return;
	p = (struct plus_seen){0};
	T_INT(0, sv_readdir_nodes(c, node_of(c, "keys"), 0, plus_add, &p));
	T_UINT(5000, p.unmade);
	T_UINT(base, sv_node_count(c));
	sv_container_free(c);
}

/* What a container told its client to drop (sv_node_evictable), in order. */
struct told {
	uint32_t *v;
	char **names;
	size_t n, capv, capn, done;
	bool all_gone;
};

static void told_note(void *arg, uint32_t node, uint32_t parent, const char *name, bool gone)
{
	struct told *t = arg;
	(void)parent;
	t->all_gone &= gone;
	if (sv_grow((void **)&t->v, &t->capv, t->n + 1, sizeof *t->v) ||
	    sv_grow((void **)&t->names, &t->capn, t->n + 1, sizeof *t->names)) {
		T_OK(false);
		return;
	}
	t->v[t->n] = node;
	t->names[t->n++] = strdup(name);
}

/* The client forgets, once each, what it was told to drop since it last
 * looked: each told node goes. */
static void forget_told(struct sv_container *c, struct told *t)
{
	struct sv_stat st;
	for (; t->done < t->n; t->done++) {
		sv_forget(c, t->v[t->done], 1);
		T_INT(-ESTALE, sv_stat(c, t->v[t->done], &st));
	}
}

static void told_fini(struct told *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	free(t->v);
}

/* The client looks up key i of directory keys (its kv name k0000 on):
 * its node, held once more. */
static uint32_t held_key(struct sv_container *c, uint32_t keys, uint32_t i)
{
	char name[16];
	uint32_t n = SV_NONE;
	snprintf(name, sizeof name, "k%04u", i);
	T_INT(0, sv_lookup_held(c, keys, name, &n));
	return n;
}

/* Entries the client looks up one by one (as cat of each file does): past
 * the budget (4,096 nodes at a 1 MiB cache), each new node has the
 * container tell the client to drop the oldest entry it holds, as gone,
 * one for one and oldest first, passing over one that is open; forgotten,
 * those go; one looked up again before its forget keeps its number. */
static void shed_nodes(void)
{
	struct sv_container *c = kv_small_cache(at("shed.kv"), 9000, 0);
	if (!c)
		return;
	struct told t = {.all_gone = true};
	sv_container_set_notify(c, told_note, &t);
	uint32_t keys = node_of(c, "keys"), base = sv_node_count(c);
	uint32_t room = 4096 - base, k[9000];
	for (uint32_t i = 0; i < room; i++) {
		k[i] = held_key(c, keys, i);
		if (i == 1)
			T_INT(0, sv_open(c, k[1]));
	}
	T_UINT(0, t.n);
	T_UINT(4096, sv_node_count(c));
	for (uint32_t i = room; i < room + 10; i++) {
		k[i] = held_key(c, keys, i);
	}
	/* Ten made past the budget, ten told: k0000, then k0002 on (k0001
	 * is open). */
	T_UINT(10, t.n);
	if (t.n < 10) {
		told_fini(&t);
		sv_container_free(c);
		return;
	}
	T_OK(t.all_gone);
	T_STR("k0000", t.names[0]);
	T_UINT(k[0], t.v[0]);
	T_STR("k0002", t.names[1]);
	T_STR("k0010", t.names[9]);
	T_UINT(k[10], t.v[9]);
	/* A name looked up again before its forget: the same node, and not
	 * told again. */
	uint32_t again;
	T_INT(0, sv_lookup_held(c, keys, "k0000", &again));
	T_UINT(k[0], again);
	T_UINT(10, t.n);
	/* The client forgets what it was told to drop (k0000 held twice):
	 * those go, and their numbers serve the next ten, which have ten
	 * more told: the table stays where it was. */
	sv_forget(c, k[0], 1);
	forget_told(c, &t);
	for (uint32_t i = room + 10; i < room + 20; i++) {
		k[i] = held_key(c, keys, i);
	}
	T_UINT(4106, sv_node_count(c));
	T_UINT(20, t.n);
	if (t.n >= 20) {
		T_STR("k0011", t.names[10]);
		T_STR("k0020", t.names[19]);
	}
	struct sv_stat st;
	T_INT(0, sv_stat(c, k[1], &st));
	/* Closed, k0001 is told when its turn comes round again (behind the
	 * 4,000 and more entries made before it went to the back). */
	sv_release(c, k[1]);
	bool k0001 = false;
	for (uint32_t i = room + 20; i < 9000 && !k0001; i++) {
		forget_told(c, &t);
		k[i] = held_key(c, keys, i);
		for (size_t j = t.done; j < t.n; j++)
			k0001 |= !strcmp(t.names[j], "k0001");
	}
	T_OK(k0001);
	forget_told(c, &t);
	T_OK(t.all_gone);
	sv_container_set_notify(c, NULL, NULL);
	sv_container_free(c);
	told_fini(&t);
}

/* A client that does not forget what it is told (behind, as the kernel is
 * on a busy machine: each telling waits for the directory to be idle):
 * once more than half a budget of told entries (2,048 at a 1 MiB cache)
 * is not forgotten, entries are told no more; the directory is, as gone,
 * in its parent, once per an eighth of the budget (512) made meanwhile.
 * Once the told entries are forgotten, they are told one by one again. */
static void shed_when_behind(void)
{
	struct sv_container *c = kv_small_cache(at("behind.kv"), 9000, 0);
	if (!c)
		return;
	struct told t = {.all_gone = true};
	sv_container_set_notify(c, told_note, &t);
	uint32_t keys = node_of(c, "keys"), i = 0;
	for (; i < 9000 && t.n <= 2048; i++)
		held_key(c, keys, i);
	size_t entries = t.n;
	T_OK(entries > 2048 && entries <= 2050);
	for (uint32_t k = 0; k < 511; k++, i++)
		held_key(c, keys, i);
	T_UINT(entries, t.n);
	for (int round = 1; round <= 2; round++) {
		held_key(c, keys, i++);
		T_UINT(entries + (size_t)round, t.n);
		if (t.n != entries + (size_t)round)
			break;
		T_STR("keys", t.names[t.n - 1]);
		T_UINT(keys, t.v[t.n - 1]);
		for (uint32_t k = 0; round == 1 && k < 511; k++, i++)
			held_key(c, keys, i);
	}
	T_OK(t.all_gone);
	/* The client catches up: the entries told go, and the next made past
	 * the budget has the oldest entry told again, not the directory. */
	struct sv_stat st;
	for (size_t j = 0; j < t.n; j++)
		if (t.v[j] != keys) {
			sv_forget(c, t.v[j], 1);
			T_INT(-ESTALE, sv_stat(c, t.v[j], &st));
		}
	size_t before = t.n;
	held_key(c, keys, i++);
	T_OK(t.n > before);
	if (t.n > before)
		T_OK(strcmp(t.names[t.n - 1], "keys") != 0 && t.v[t.n - 1] != keys);
	sv_container_set_notify(c, NULL, NULL);
	sv_container_free(c);
	told_fini(&t);
}

/* The node table lives in a file past the spill threshold (1 MiB, 20,000
 * nodes held here): what a client holds costs the arrays' window, not the
 * heap.  It goes with the container. */
static void node_table_spills(void)
{
	struct sv_tab_stats st0, st;
	sv_tab_stats(&st0);
	struct sv_container *c = kv_small_cache(at("table.kv"), 20000, 0);
	if (!c)
		return;
	uint32_t keys = node_of(c, "keys"), base = sv_node_count(c);
	for (uint32_t i = 0; i < 20000; i++)
		held_key(c, keys, i);
	T_UINT(base + 20000, sv_node_count(c));
	sv_tab_stats(&st);
	T_UINT(st0.arrays + 1, st.arrays);
	T_OK(st.bytes - st0.bytes >= 20000 * sizeof(struct sv_node));
	T_STR("v19999", value(c, "keys/k19999"));
	sv_container_free(c);
	sv_tab_stats(&st);
	T_UINT(st0.arrays, st.arrays);
}

/* Under the budget nothing is told, and the queue of made entries keeps
 * no more than the nodes held: a client that looks a name up and forgets
 * it 20,000 times leaves it near empty, not 20,000 long. */
static void shed_queue_bounded(void)
{
	struct sv_container *c = kv_small_cache(at("queue.kv"), 100, 0);
	if (!c)
		return;
	struct told t = {.all_gone = true};
	sv_container_set_notify(c, told_note, &t);
	uint32_t keys = node_of(c, "keys"), n;
	for (int i = 0; i < 20000; i++) {
		T_INT(0, sv_lookup_held(c, keys, "k0042", &n));
		sv_forget(c, n, 1);
	}
	T_UINT(0, t.n);
	size_t queued = sv_container_evict_queued(c);
	T_OK(queued <= 16);
	if (queued > 16)
		fprintf(stderr, "  %zu entries queued, %u nodes\n", queued, sv_node_count(c));
	sv_container_set_notify(c, NULL, NULL);
	sv_container_free(c);
	told_fini(&t);
}

/* A format reading a file another program appends to: sv_container_read
 * gives what the file holds now, fewer bytes at its end and the bytes
 * appended since the open, where sv_container_pread keeps to the size it
 * was opened at. */
static void read_as_it_grows(void)
{
	const char *path = at("grows.kv");
	put_file(path, "a=1\nb=2\n");
	struct sv_container *c = open_as(path, &kv_rewrite);
	if (!c)
		return;
	char buf[32];
	size_t got = 99;
	struct sv_err err;
	T_INT(0, sv_container_read(c, 4, buf, sizeof buf, &got, &err));
	T_UINT(4, got);
	T_OK(!memcmp(buf, "b=2\n", 4));
	T_INT(0, sv_container_read(c, 8, buf, sizeof buf, &got, &err));
	T_UINT(0, got);
	int fd = open(path, O_WRONLY | O_APPEND);
	T_OK(fd >= 0);
	T_INT(4, write(fd, "c=3\n", 4));
	close(fd);
	T_INT(0, sv_container_read(c, 6, buf, sizeof buf, &got, &err));
	T_UINT(6, got);
	T_OK(!memcmp(buf, "2\nc=3\n", 6));
	T_UINT(12, sv_container_size_now(c));
	T_UINT(8, sv_container_size(c));
	T_INT(-EBADMSG, sv_container_pread(c, 8, buf, 4, &err));
	sv_container_free(c);
}

/* The node budget shares the cache's cap: 8,192 nodes at an empty 8 MiB
 * cache, 4,096 once the cache holds 7.8 MB.  7,300 entries are held
 * without a word while the cache is empty; reading the big ones fills
 * it, and past the smaller budget each entry made has the container tell
 * its client to drop two, until it is back within an eighth of it. */
static void shed_as_cache_fills(void)
{
	const char *path = at("fills.kv");
	struct sv_buf b;
	sv_buf_init(&b);
	for (int i = 0; i < 10300; i++) {
		sv_buf_printf(&b, "k%04d=", i);
		for (int k = 0; i < 1300 && k < 6000; k++)
			sv_buf_add(&b, "x", 1);
		sv_buf_add(&b, i < 1300 ? "\n" : "v\n", i < 1300 ? 1 : 2);
	}
	put_buf(path, &b);
	sv_buf_fini(&b);
	struct sv_opts o;
	sv_opts_init(&o);
	o.cache_cap = 8 << 20;
	o.readahead = 0;
	struct sv_container *c = NULL;
	struct sv_err err;
	T_INT(0, sv_container_open_as(path, &kv_index, &o, &c, &err));
	if (!c)
		return;
	struct told t = {.all_gone = true};
	sv_container_set_notify(c, told_note, &t);
	uint32_t keys = node_of(c, "keys"), base = sv_node_count(c), n;
	char name[16];
	for (int i = 1300; i < 7300; i++) {
		snprintf(name, sizeof name, "k%04d", i);
		T_INT(0, sv_lookup_held(c, keys, name, &n));
	}
	T_UINT(0, t.n);
	for (int i = 0; i < 1300; i++) {
		snprintf(name, sizeof name, "k%04d", i);
		T_INT(0, sv_lookup_held(c, keys, name, &n));
		struct sv_blob *v = NULL;
		T_INT(0, sv_content(c, n, &v, NULL));
		T_UINT(6000, v ? v->len : 0);
		sv_blob_unref(v);
		forget_told(c, &t);
	}
	struct sv_cache_stats st;
	sv_container_cache_stats(c, &st);
	T_OK(st.bytes >= 1300 * 6000);
	size_t filled = t.n;
	T_OK(filled > 0);
	for (int i = 7300; i < 10300; i++) {
		snprintf(name, sizeof name, "k%04d", i);
		T_INT(0, sv_lookup_held(c, keys, name, &n));
		forget_told(c, &t);
	}
	uint64_t live = base + 10300 - t.n;
	T_OK(live <= 4096 + 4096 / 8 + 2);
	T_OK(live >= 4096 - 2);
	if (live > 4096 + 4096 / 8 + 2 || live < 4096 - 2)
		fprintf(stderr, "  %llu nodes held after %zu told\n", (unsigned long long)live, t.n);
	T_OK(t.all_gone);
	sv_container_set_notify(c, NULL, NULL);
	sv_container_free(c);
	told_fini(&t);
}

/* A client that keeps every entry it is given (as the kernel does with a
 * readdirplus entry) asks a folder's listing to go on, not to stop. */
struct held_names {
	char names[16][32];
	size_t n;
};

static int keep_all(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct held_names *h = arg;
	if (h->n < 16)
		snprintf(h->names[h->n++], sizeof h->names[0], "%s", name);
	return SV_DIR_HELD;
}

static void folder_listing_held(void)
{
	char d[300];
	snprintf(d, sizeof d, "%s/folder", dir);
	T_INT(0, mkdir(d, 0755));
	for (int i = 0; i < 3; i++) {
		char p[340];
		snprintf(p, sizeof p, "%s/plain%d.txt", d, i);
		put_file(p, "not a container\n");
	}
	struct sv_opts o;
	sv_opts_init(&o);
	struct sv_tree *t = NULL;
	struct sv_err err;
	T_INT(0, sv_tree_open(d, &o, &t, &err));
	if (!t)
		return;
	T_OK(sv_tree_is_folder(t));
	struct held_names h = {0};
	T_INT(0, sv_tree_readdir(t, SV_TREE_ROOT, 0, keep_all, &h));
	T_UINT(4, h.n);
	if (h.n == 4) {
		T_STR(".savefs", h.names[0]);
		T_STR("plain0.txt", h.names[1]);
		T_STR("plain2.txt", h.names[3]);
	}
	sv_tree_free(t);
}

/* ---- the memory source, and the flags a format declares ---------------------------- */

static void memory_and_flags(void)
{
	struct sv_opts o;
	sv_opts_init(&o);
	struct sv_container *c = NULL;
	struct sv_err err;
	/* open_mem sniffs: no registered format reads kv. */
	T_INT(-EMEDIUMTYPE, sv_container_open_mem("a=1\n", 4, &o, &c, &err));
	/* Read-only whatever the format's kind. */
	const char *path = at("flags.kv");
	put_file(path, "a=1\n");
	o.read_only = true;
	T_INT(0, sv_container_open_as(path, &kv_rewrite, &o, &c, &err));
	if (!c)
		return;
	T_OK(sv_container_read_only(c));
	T_INT(-EROFS, edit(c, "a", "2", &err));
	/* Flags that do not go together are refused by sv_node_add. */
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "x", SV_N_LAZYDIR, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "x", SV_N_INDEXDIR, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "x", SV_N_SIZE_AWAITED | SV_N_LAZYSIZE, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "x", SV_N_DIR | SV_N_INDEXDIR | SV_N_LAZYDIR, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "x", SV_N_DIR | SV_N_LIST_AS_NODES, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "y", SV_N_SIZE_ON_STAT, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "z", SV_N_REMOVABLE, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "w", SV_N_DIR | SV_N_STREAM, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, SV_ROOT, "v", 1u << 30, 0, 0));
	T_OK(log_has(c, "the format declared \"v\" with flags 0x40000000 that do not go "
			"together: left out"));
	T_OK(sv_node_add(c, SV_ROOT, "u", SV_N_LAZYSIZE | SV_N_SIZE_ON_STAT, 0, 0) != SV_NONE);
	/* The core's state of a node, as a format reads it. */
	T_UINT(SV_S_META, sv_node_state(c, node_of(c, ".savefs/info")));
	T_UINT(0, sv_node_state(c, node_of(c, "a")));
	T_UINT(0, sv_node_state(c, 999999));
	sv_container_free(c);
}

static void remove_tree(const char *p)
{
	DIR *d = opendir(p);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char q[512];
		snprintf(q, sizeof q, "%s/%s", p, e->d_name);
		if (e->d_type == DT_DIR)
			remove_tree(q);
		else
			unlink(q);
	}
	if (d)
		closedir(d);
	rmdir(p);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	file_kind(&kv_rewrite, true);
	file_kind(&kv_inplace, false);
	append_kind();
	members_kind();
	memory_and_flags();
	index_dirs();
	index_readahead();
	listed_nodes();
	shed_nodes();
	shed_when_behind();
	node_table_spills();
	shed_queue_bounded();
	read_as_it_grows();
	shed_as_cache_fills();
	folder_listing_held();
	remove_tree(dir);
	return t_done();
}
