/*
 * test_index.c - the persistent index (core/index.c): a record read back
 * as stored; none for a container never indexed; a stale record never
 * used (the container changed by size, or by content with its size and
 * mtime put back: the ctime moved), and removed; a truncated, damaged or
 * foreign record file ignored and removed; a record over the reader's
 * limit refused; two processes storing the same record at once leave one
 * of the two whole; the store capped, least recently used out; the
 * store's directory from $XDG_CACHE_HOME or $HOME.
 */
#include "savefs.h"
#include "t.h"

#include <errno.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[64];
static char dir[128];
static char cont[128];

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static struct sv_index_key key_now(const char *what)
{
	struct sv_index_key k = {"testfmt", 3, what, {0}};
	if (stat(cont, &k.st)) {
		perror(cont);
		exit(1);
	}
	return k;
}

static int count_files(void)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls -A %s | grep -c .", dir);
	FILE *p = popen(cmd, "r");
	int n = -1;
	if (!p || fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

/* The one record file in dir (its path into buf), or 0 if not one. */
static int only_record(char *buf, size_t size)
{
	int n = count_files();
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls -A %s", dir);
	FILE *p = popen(cmd, "r");
	char name[128] = "";
	if (p && fgets(name, sizeof name, p))
		name[strcspn(name, "\n")] = 0;
	if (p)
		pclose(p);
	snprintf(buf, size, "%s/%s", dir, name);
	return n == 1;
}


static void round_trip(void)
{
	put_file(cont, "a container\n");
	struct sv_index_key k = key_now("names");
	struct sv_blob *b = NULL;
	T_INT(-ENOENT, sv_index_load(dir, &k, 1 << 20, &b));
	T_OK(b == NULL);
	T_INT(0, sv_index_store(dir, &k, "alpha\nbeta\n", 11, 1 << 20));
	T_INT(0, sv_index_load(dir, &k, 1 << 20, &b));
	T_OK(b && b->len == 11);
	if (b)
		T_MEM("alpha\nbeta\n", b->data, 11);
	sv_blob_unref(b);
	/* Another record of the same container, and another version: apart. */
	struct sv_index_key k2 = key_now("offsets");
	T_INT(-ENOENT, sv_index_load(dir, &k2, 1 << 20, &b));
	k2 = k;
	k2.version = 4;
	T_INT(-ENOENT, sv_index_load(dir, &k2, 1 << 20, &b));
	/* Over the reader's limit: refused and gone. */
	T_INT(-EFBIG, sv_index_load(dir, &k, 10, &b));
	T_INT(-ENOENT, sv_index_load(dir, &k, 1 << 20, &b));
	/* An empty record is a record. */
	T_INT(0, sv_index_store(dir, &k, "", 0, 1 << 20));
	T_INT(0, sv_index_load(dir, &k, 1 << 20, &b));
	T_OK(b && b->len == 0);
	sv_blob_unref(b);	/* A record stored in pieces reads back as one. */
	struct iovec v[3] = {{"alpha", 5}, {"", 0}, {"\nbeta\n", 6}};
	T_INT(0, sv_index_storev(dir, &k, v, 3, 1 << 20));
	T_INT(0, sv_index_load(dir, &k, 1 << 20, &b));
	T_OK(b && b->len == 11);
	if (b)
		T_MEM("alpha\nbeta\n", b->data, 11);
	sv_blob_unref(b);
	/* Over the store's cap, counted over the pieces: not kept. */
	T_INT(-EFBIG, sv_index_storev(dir, &k, v, 3, 16));
	/* Pieces of megabytes (a log's entry table, spilled to a file, is
	 * stored from its mapping): read back byte for byte. */
	size_t sizes[3] = {(9u << 20) + 3, 5, (4u << 20) + 1};
	struct iovec big[3];
	uint8_t *want = malloc(sizes[0] + sizes[1] + sizes[2]);
	size_t at = 0;
	for (int i = 0; i < 3; i++) {
		big[i].iov_base = want + at;
		big[i].iov_len = sizes[i];
		for (size_t j = 0; j < sizes[i]; j++)
			want[at + j] = (uint8_t)((at + j) * 2654435761u >> 24);
		at += sizes[i];
	}
	T_INT(0, sv_index_storev(dir, &k, big, 3, 64u << 20));
	T_INT(0, sv_index_load(dir, &k, 64u << 20, &b));
	T_OK(b && b->len == at);
	if (b && b->len == at)
		T_MEM(want, b->data, at);
	sv_blob_unref(b);
	free(want);
}

static void stale(void)
{
	struct sv_blob *b = NULL;
	put_file(cont, "version one\n");
	struct sv_index_key k = key_now("names");
	T_INT(0, sv_index_store(dir, &k, "one", 3, 1 << 20));
	/* Changed by size. */
	put_file(cont, "version two, longer\n");
	struct sv_index_key now = key_now("names");
	T_INT(-ESTALE, sv_index_load(dir, &now, 1 << 20, &b));
	T_INT(-ENOENT, sv_index_load(dir, &k, 1 << 20, &b)); /* removed */
	/* Changed in content with the same size and mtime: the ctime says. */
	put_file(cont, "version one\n");
	k = key_now("names");
	T_INT(0, sv_index_store(dir, &k, "one", 3, 1 << 20));
	struct timespec pause = {0, 20 * 1000 * 1000};
	nanosleep(&pause, NULL);
	put_file(cont, "version 1!!\n");
	struct timespec times[2] = {k.st.st_atim, k.st.st_mtim};
	T_INT(0, utimensat(AT_FDCWD, cont, times, 0));
	now = key_now("names");
	T_INT((int64_t)k.st.st_size, (int64_t)now.st.st_size);
	T_INT((int64_t)k.st.st_mtim.tv_nsec, (int64_t)now.st.st_mtim.tv_nsec);
	T_INT(-ESTALE, sv_index_load(dir, &now, 1 << 20, &b));
	T_OK(b == NULL);
}

static void damaged(void)
{
	struct sv_blob *b = NULL;
	char rec[256];
	put_file(cont, "a container\n");
	struct sv_index_key k = key_now("names");
	/* Truncated. */
	T_INT(0, sv_index_store(dir, &k, "0123456789", 10, 1 << 20));
	T_OK(only_record(rec, sizeof rec));
	struct stat st;
	T_INT(0, stat(rec, &st));
	T_INT(0, truncate(rec, st.st_size - 3));
	T_INT(-EBADMSG, sv_index_load(dir, &k, 1 << 20, &b));
	T_INT(0, count_files());
	/* A byte of the payload changed. */
	T_INT(0, sv_index_store(dir, &k, "0123456789", 10, 1 << 20));
	int fd = open(rec, O_WRONLY);
	T_OK(fd >= 0 && pwrite(fd, "X", 1, st.st_size - 1) == 1);
	close(fd);
	T_INT(-EBADMSG, sv_index_load(dir, &k, 1 << 20, &b));
	T_INT(0, count_files());
	/* Foreign: another program's bytes at the record's name. */
	T_INT(0, sv_index_store(dir, &k, "0123456789", 10, 1 << 20));
	put_file(rec, "{\"not\": \"an index\"}\n");
	T_INT(-EBADMSG, sv_index_load(dir, &k, 1 << 20, &b));
	T_INT(-ENOENT, sv_index_load(dir, &k, 1 << 20, &b));
	T_OK(b == NULL);
}

/* Two processes store the same record, 200 times each, at once: what is
 * read after is one of the two, whole. */
static void two_writers(void)
{
	put_file(cont, "a container\n");
	struct sv_index_key k = key_now("names");
	static char a[100000], c[100000];
	memset(a, 'a', sizeof a);
	memset(c, 'c', sizeof c);
	pid_t pid[2];
	for (int w = 0; w < 2; w++) {
		pid[w] = fork();
		if (pid[w] == 0) {
			for (int i = 0; i < 200; i++)
				if (sv_index_store(dir, &k, w ? c : a, w ? sizeof c : sizeof a - 1,
						   1 << 24))
					_exit(1);
			_exit(0);
		}
	}
	for (int w = 0; w < 2; w++) {
		int status = -1;
		waitpid(pid[w], &status, 0);
		T_INT(0, status);
	}
	struct sv_blob *b = NULL;
	T_INT(0, sv_index_load(dir, &k, 1 << 24, &b));
	T_OK(b && ((b->len == sizeof a - 1 && !memcmp(b->data, a, b->len)) ||
		   (b->len == sizeof c && !memcmp(b->data, c, b->len))));
	sv_blob_unref(b);
	T_INT(1, count_files()); /* no temporary left */
}

static void capped(void)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -f %s/*", dir);
	T_INT(0, system(cmd));
	put_file(cont, "a container\n");
	static char big[1000];
	memset(big, 'x', sizeof big);
	const char *names[] = {"r0", "r1", "r2", "r3"};
	struct sv_index_key k[4];
	struct timespec pause = {0, 20 * 1000 * 1000};
	for (int i = 0; i < 3; i++) {
		k[i] = key_now(names[i]);
		T_INT(0, sv_index_store(dir, &k[i], big, sizeof big, 4000));
		nanosleep(&pause, NULL);
	}
	T_INT(3, count_files());
	/* r0 used: r1 is now the least recently used, and goes first. */
	struct sv_blob *b = NULL;
	T_INT(0, sv_index_load(dir, &k[0], 1 << 20, &b));
	sv_blob_unref(b);
	nanosleep(&pause, NULL);
	k[3] = key_now(names[3]);
	T_INT(0, sv_index_store(dir, &k[3], big, sizeof big, 3500));
	T_INT(3, count_files());
	T_INT(-ENOENT, sv_index_load(dir, &k[1], 1 << 20, &b));
	T_INT(0, sv_index_load(dir, &k[0], 1 << 20, &b));
	sv_blob_unref(b);
	T_INT(0, sv_index_load(dir, &k[3], 1 << 20, &b));
	sv_blob_unref(b);
	/* A temporary a crashed store left an hour ago goes; a fresh one (a
	 * store under way) stays. */
	char old_tmp[256], new_tmp[256];
	snprintf(old_tmp, sizeof old_tmp, "%s/.savefs-AAAAAA", dir);
	snprintf(new_tmp, sizeof new_tmp, "%s/.savefs-BBBBBB", dir);
	put_file(old_tmp, "half");
	put_file(new_tmp, "half");
	struct timespec hour_ago[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
	T_INT(0, utimensat(AT_FDCWD, old_tmp, hour_ago, 0));
	T_INT(0, sv_index_store(dir, &k[3], big, sizeof big, 3500));
	T_INT(-1, access(old_tmp, F_OK));
	T_INT(0, access(new_tmp, F_OK));
	unlink(new_tmp);
	/* A record bigger than the whole store is not stored. */
	T_INT(-EFBIG, sv_index_store(dir, &k[2], big, sizeof big, 500));
}

static void where(void)
{
	char buf[256];
	setenv("XDG_CACHE_HOME", "/var/cache/x", 1);
	T_INT(0, sv_index_dir(buf, sizeof buf));
	T_STR("/var/cache/x/savefs", buf);
	setenv("XDG_CACHE_HOME", "relative", 1); /* not absolute: ignored */
	setenv("HOME", "/home/player", 1);
	T_INT(0, sv_index_dir(buf, sizeof buf));
	T_STR("/home/player/.cache/savefs", buf);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	T_INT(-ENOENT, sv_index_dir(buf, sizeof buf));
	setenv("HOME", "/home/player", 1);
	T_INT(-ENAMETOOLONG, sv_index_dir(buf, 10));
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/savefs-index.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	/* Made by the first store, with the directory above it. */
	snprintf(dir, sizeof dir, "%s/cache/store", root);
	snprintf(cont, sizeof cont, "%s/game.world", root);
	round_trip();
	stale();
	damaged();
	two_writers();
	capped();
	where();
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", root);
	return t_done();
}
