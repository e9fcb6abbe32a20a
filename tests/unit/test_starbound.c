/*
 * test_starbound.c - the Starbound format as a container, in-process: a
 * World4 database written by mksbdb ($MKSBDB), its tree, and its commits
 * in place: an entity and a tile edited land in the same file (the same
 * inode) and read back after a remount; a tile sheet that does not parse
 * is refused with the file's bytes unchanged; identical bytes commit
 * nothing; another program's commit (mksbdb put: the game's root flip)
 * while the container is open makes the next commit EBUSY and the tree
 * is read again as that program left it.
 */
#include "container.h"
#include "format.h"
#include "t.h"
#include "tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/savefs-test-starbound-XXXXXX";

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Replaces path's content and commits. */
static int put(struct sv_container *c, const char *path, const char *p, size_t n,
	       struct sv_err *err)
{
	int rc = put_text(c, path, p, n, err);
	return rc ? rc : sv_commit(c, NULL, NULL, err);
}

/* s with its first `from` replaced by `to` (a new string). */
static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	T_OK(at != NULL);
	if (!at)
		return strdup(s);
	size_t n = strlen(s) - strlen(from) + strlen(to);
	char *r = malloc(n + 1);
	snprintf(r, n + 1, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
	return r;
}

static struct stat stat_of(const char *path)
{
	struct stat st;
	memset(&st, 0, sizeof st);
	T_INT(0, stat(path, &st));
	return st;
}

static int counted(void *arg, const char *name, const struct sv_stat *s, uint64_t next)
{
	(*(uint64_t *)arg)++;
	return 0;
}

static uint64_t count_kids(struct sv_container *c, const char *path)
{
	uint64_t n = 0;
	list_dir(c, path, counted, &n);
	return n;
}

int main(void)
{
	const char *mk = getenv("MKSBDB");
	if (!mk) {
		fprintf(stderr, "MKSBDB is not set (meson test sets it)\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	char world[300], cmd[1024];
	snprintf(world, sizeof world, "%s/w.world", dir);
	snprintf(cmd, sizeof cmd, "'%s' world '%s' -s 2 -e 2 -S 5", mk, world);
	T_INT(0, system(cmd));
	struct sv_container *c = open_path(world);
	if (!c)
		return t_done();
	struct sv_err err;
	T_STR("btreedb5", sv_format_name(sv_container_format(c)));
	T_INT(SV_COMMIT_IN_PLACE, sv_container_commit_kind(c));
	/* Opened without a node per record: the root's files and directories,
	 * world/'s, and /.savefs/'s.  keys/, world/tiles/ and world/entities/
	 * are listed from the key table; a record's view is a node once it is
	 * looked up, and only that one. */
	uint32_t at_open = sv_node_count(c);
	T_OK(at_open < 16);
	uint32_t key;
	T_INT(0, sv_resolve(c, "keys/0100000000", &key));
	T_UINT(at_open + 1, sv_node_count(c));
	T_INT(-ENOENT, sv_resolve(c, "keys/0100000001", &key));
	T_INT(-ENOENT, sv_resolve(c, "keys/01000000", &key));
	/* Two tile sectors (three views each) and two entity sectors, listed
	 * without a node each. */
	T_UINT(6, count_kids(c, "world/tiles"));
	T_UINT(2, count_kids(c, "world/entities"));
	T_UINT(at_open + 1, sv_node_count(c));
	T_INT(-ENOENT, sv_resolve(c, "world/tiles/0,0.bin", &key));
	T_INT(-ENOENT, sv_resolve(c, "world/tiles/00,0.tsv", &key));
	size_t n;
	char *ent = text_of(c, "world/entities/0,0.json", &n);
	T_HAS(ent, "\"description\": \"a chest\"");
	char *tsv = text_of(c, "world/tiles/0,0.tsv", &n);
	T_HAS(tsv, "# version 416 generation 0\n0\t0\t9\t0\t2\t");
	struct stat st0 = stat_of(world);

	/* Identical bytes: nothing committed, the file as it was. */
	T_INT(0, put(c, "world/entities/0,0.json", ent, strlen(ent), &err));
	struct stat st1 = stat_of(world);
	T_UINT((uint64_t)st0.st_size, (uint64_t)st1.st_size);
	T_UINT((uint64_t)st0.st_mtim.tv_nsec, (uint64_t)st1.st_mtim.tv_nsec);

	/* An entity and a tile, edited in place. */
	char *ent2 = replace(ent, "a chest", "a box");
	int rc = put(c, "world/entities/0,0.json", ent2, strlen(ent2), &err);
	if (rc)
		fprintf(stderr, "  (commit: %s)\n", err.msg);
	T_INT(0, rc);
	char *tsv2 = replace(tsv, "\n0\t0\t9\t", "\n0\t0\t11\t");
	rc = put(c, "world/tiles/0,0.tsv", tsv2, strlen(tsv2), &err);
	if (rc)
		fprintf(stderr, "  (commit: %s)\n", err.msg);
	T_INT(0, rc);
	T_UINT((uint64_t)st0.st_ino, (uint64_t)stat_of(world).st_ino);
	char *got = text_of(c, "world/tiles/0,0.tsv", &n);
	T_STR(tsv2, got);
	free(got);

	/* A sheet that does not parse: refused, the file's bytes unchanged. */
	struct stat st2 = stat_of(world);
	char *bad = replace(tsv2, "\n0\t0\t11\t", "\n0\t0\tx\t");
	T_INT(-EINVAL, put(c, "world/tiles/0,0.tsv", bad, strlen(bad), &err));
	T_HAS(err.msg, "line 3");
	struct stat st3 = stat_of(world);
	T_UINT((uint64_t)st2.st_size, (uint64_t)st3.st_size);
	T_UINT((uint64_t)st2.st_mtim.tv_nsec, (uint64_t)st3.st_mtim.tv_nsec);
	free(bad);

	/* Another program commits (the game's way) while it is open. */
	snprintf(cmd, sizeof cmd, "'%s' put '%s' 0900000000 '[]'", mk, world);
	T_INT(0, system(cmd));
	char *ent3 = replace(ent2, "a box", "a crate");
	T_INT(-EBUSY, put(c, "world/entities/0,0.json", ent3, strlen(ent3), &err));
	T_HAS(err.msg, "was changed by another program since it was read");
	got = text_of(c, "world/entities/0,0.json", &n);
	T_HAS(got, "\"description\": \"a box\"");
	free(got);
	/* Read again as that program left it: its record, then ours. */
	T_OK(sv_resolve(c, "keys/0900000000", &(uint32_t){0}) == 0);
	T_INT(0, put(c, "world/entities/0,0.json", ent3, strlen(ent3), &err));
	sv_container_free(c);

	c = open_path(world);
	if (c) {
		got = text_of(c, "world/entities/0,0.json", &n);
		T_HAS(got, "\"description\": \"a crate\"");
		free(got);
		got = text_of(c, "world/tiles/0,0.tsv", &n);
		T_STR(tsv2, got);
		free(got);
		sv_container_free(c);
	}
	free(ent);
	free(ent2);
	free(ent3);
	free(tsv);
	free(tsv2);

	/* Opening reads the B-tree's blocks through two windows, one on the
	 * index blocks and one on the run of leaves, each growing while the
	 * blocks come in file order: a 4 MB world in under 30 reads, and not
	 * much more than its size (51 reads and 11% more bytes with one
	 * window, which the walk's returns to the index started again from
	 * 16 KiB; 300 and more reads, a third more bytes, with windows that
	 * did not grow). */
	snprintf(world, sizeof world, "%s/big.world", dir);
	snprintf(cmd, sizeof cmd, "'%s' world '%s' -s 800 -e 800 -W 100 -L 0 > /dev/null", mk,
		 world);
	T_INT(0, system(cmd));
	c = open_path(world);
	if (c) {
		uint64_t reads, bytes, size = (uint64_t)stat_of(world).st_size;
		sv_container_reads(c, &reads, &bytes);
		if (reads >= 30 || bytes > size + size / 16)
			fprintf(stderr, "  (the open read %llu bytes of %llu in %llu reads)\n",
				(unsigned long long)bytes, (unsigned long long)size,
				(unsigned long long)reads);
		T_OK(reads < 30);
		T_OK(bytes <= size + size / 16);
		T_UINT(2400, count_kids(c, "world/tiles"));
		sv_container_free(c);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	T_INT(0, system(cmd));
	return t_done();
}
