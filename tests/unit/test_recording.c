/*
 * test_recording.c - the recording format as a container, in-process: a
 * compacted file and the same run as a live directory of segments
 * (written by mkrecording, $MKRECORDING), their trees and views, and
 * their commits: a metadata edit rewrites the compacted file (a new
 * inode, the chunks' bytes the same) and replaces the directory's
 * preamble alone (the segments untouched); a metadata edit that is not
 * SNBT is refused with nothing written.
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

static char dir[] = "/tmp/savefs-test-recording-XXXXXX";

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void metadata_edit(struct sv_container *c, const char *text, struct sv_err *err, int want)
{
	T_INT(0, put_text(c, "metadata.snbt", text, strlen(text), err));
	int rc = sv_commit(c, NULL, NULL, err);
	if (rc != want)
		fprintf(stderr, "  (commit: %s)\n", err->msg);
	T_INT(want, rc);
}

static ino_t ino(const char *path)
{
	struct stat st;
	T_INT(0, stat(path, &st));
	return st.st_ino;
}

int main(void)
{
	const char *mk = getenv("MKRECORDING");
	if (!mk) {
		fprintf(stderr, "MKRECORDING is not set (meson test sets it)\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	char file[300], seg[300], cmd[1024];
	snprintf(file, sizeof file, "%s/run.hcrp", dir);
	snprintf(seg, sizeof seg, "%s/run", dir);
	snprintf(cmd, sizeof cmd, "'%s' compacted '%s' -n 250 -s 3 --quiet && "
		 "'%s' segmented '%s' -n 250 -s 3 --quiet", mk, file, mk, seg);
	T_INT(0, system(cmd));

	struct sv_container *f = open_path(file), *d = open_path(seg);
	if (!f || !d)
		return t_done();
	struct sv_err err;
	T_STR("recording", sv_format_name(sv_container_format(f)));
	T_INT(SV_COMMIT_REWRITE, sv_container_commit_kind(f));
	T_OK(sv_container_is_dir(d));
	T_INT(SV_COMMIT_MEMBERS, sv_container_commit_kind(d));
	T_STR(".savefs/ header.json metadata.snbt metadata.nbt index.tsv chunks/ at/ timeline.txt",
	      listing(f, ""));
	T_STR(".savefs/ header.json metadata.snbt metadata.nbt index.tsv chunks/ at/ timeline.txt "
	      "compacted.hcrp", listing(d, ""));
	T_STR("000000.bin 000000.txt 000001.bin 000001.txt 000002.bin 000002.txt",
	      listing(f, "chunks"));
	size_t n;
	char *meta = text_of(f, "metadata.snbt", &n);
	T_STR("{\n    map: \"mkrecording\"\n}\n", meta);
	free(meta);
	char *idx = text_of(f, "index.tsv", &n);
	T_HAS(idx, "000001\t100\t100\tyes\t-\t");
	free(idx);
	/* The same run, compacted and live: the same chunks, the same text. */
	static const char *const views[] = {"chunks/000000.bin", "chunks/000001.txt",
					    "chunks/000002.bin", "timeline.txt"};
	for (size_t i = 0; i < sizeof views / sizeof *views; i++) {
		size_t a, b;
		char *x = text_of(f, views[i], &a), *y = text_of(d, views[i], &b);
		T_UINT(a, b);
		T_OK(a > 0 && a == b && !memcmp(x, y, a));
		free(x);
		free(y);
	}
	/* The timeline's size is found in the background: read to its end
	 * before any stat, it states at least what was read (a follower
	 * takes a size behind its place for a truncation). */
	struct sv_opts ro;
	sv_opts_init(&ro);
	ro.read_only = true;
	struct sv_container *g = open_file_opts(file, &ro);
	if (g) {
		uint32_t tl = SV_NONE;
		T_INT(0, sv_resolve(g, "timeline.txt", &tl));
		static char piece[4096];
		uint64_t at = 0;
		size_t got = 1;
		while (got && !sv_read(g, tl, at, piece, sizeof piece, &got, &err))
			at += got;
		struct sv_stat st;
		T_INT(0, sv_stat(g, tl, &st));
		T_UINT(at, st.size);
		T_OK(at > 0);
		sv_container_free(g);
	}
	char *txt = text_of(f, "chunks/000001.txt", &n);
	T_OK(!strncmp(txt, "100\ttick\t", 9));
	free(txt);
	/* The compacted file a live recording shows is a recording of the
	 * same run (its chunks compressed at another level). */
	size_t csz;
	char *whole = text_of(d, "compacted.hcrp", &csz);
	char from_live[400];
	snprintf(from_live, sizeof from_live, "%s/from-live.hcrp", dir);
	int fd = open(from_live, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_INT((ssize_t)csz, write(fd, whole, csz));
	close(fd);
	free(whole);
	struct sv_container *l = open_path(from_live);
	if (l) {
		size_t a, b;
		char *x = text_of(f, "chunks/000002.txt", &a), *y = text_of(l, "chunks/000002.txt", &b);
		T_OK(a > 0 && a == b && !memcmp(x, y, a));
		free(x);
		free(y);
		sv_container_free(l);
	}

	/* A metadata edit: the compacted file is written anew. */
	size_t b0len;
	char *b0 = text_of(f, "chunks/000000.bin", &b0len);
	ino_t before = ino(file);
	metadata_edit(f, "{map: \"edited\"}", &err, 0);
	T_OK(ino(file) != before);
	meta = text_of(f, "metadata.snbt", &n);
	T_STR("{\n    map: \"edited\"\n}\n", meta);
	free(meta);
	size_t b1len;
	char *b1 = text_of(f, "chunks/000000.bin", &b1len);
	T_OK(b0len == b1len && !memcmp(b0, b1, b0len));
	free(b0);
	free(b1);
	/* Not SNBT: refused, nothing written. */
	before = ino(file);
	metadata_edit(f, "{map: ", &err, -EINVAL);
	T_UINT((uint64_t)before, (uint64_t)ino(file));
	meta = text_of(f, "metadata.snbt", &n);
	T_STR("{\n    map: \"edited\"\n}\n", meta);
	free(meta);
	sv_container_free(f);
	f = open_path(file);
	if (f) {
		meta = text_of(f, "metadata.snbt", &n);
		T_STR("{\n    map: \"edited\"\n}\n", meta);
		free(meta);
		sv_container_free(f);
	}

	/* The live recording: the preamble is replaced, the segments stay. */
	char pre[400], s0[400];
	snprintf(pre, sizeof pre, "%s/preamble.dat", seg);
	snprintf(s0, sizeof s0, "%s/segment-000.dat", seg);
	ino_t pre0 = ino(pre), seg0 = ino(s0);
	metadata_edit(d, "{map: \"live\"}", &err, 0);
	T_OK(ino(pre) != pre0);
	T_UINT((uint64_t)seg0, (uint64_t)ino(s0));
	meta = text_of(d, "metadata.snbt", &n);
	T_STR("{\n    map: \"live\"\n}\n", meta);
	free(meta);
	sv_container_free(d);

	/* A segment shorter than the chunks its preamble puts in it: refused
	 * at the open (a chunk's length is never allocated before it is
	 * known to be there), as a compacted file's chunks are. */
	struct stat s0st;
	T_INT(0, stat(s0, &s0st));
	T_INT(0, truncate(s0, s0st.st_size - 1));
	struct sv_opts o;
	sv_opts_init(&o);
	struct sv_container *cut = NULL;
	sv_err_clear(&err);
	T_INT(-EBADMSG, sv_container_open(seg, &o, &cut, &err));
	T_HAS(err.msg, "recording: preamble.dat: chunks 0 to ");
	char want[200];
	snprintf(want, sizeof want, "end at byte %lld of segment-000.dat, which has %lld",
		 (long long)s0st.st_size, (long long)s0st.st_size - 1);
	T_HAS(err.msg, want);
	sv_container_free(cut);
	T_INT(0, unlink(s0));
	sv_err_clear(&err);
	T_INT(-EBADMSG, sv_container_open(seg, &o, &cut, &err));
	T_HAS(err.msg, "lie in segment-000.dat, which is not there");
	sv_container_free(cut);

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	T_INT(0, system(cmd));
	return t_done();
}
