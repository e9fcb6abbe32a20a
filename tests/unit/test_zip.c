/*
 * test_zip.c - the zip reader and writer (core/codec/zip.c), without FUSE.
 *
 * Zips are written to memory and to a file in a fresh temporary directory,
 * stored and deflated, with and without data descriptors, and read back
 * exactly (names, sizes, CRCs, times, bytes).  Members are copied raw from
 * a file and from memory into both kinds of output, one by one and in runs
 * (sv_zip_add_members: members that follow one another go across in one
 * copy, as they lie, descriptors and junk between them included; a
 * directory in another order than the file, and a member whose data runs
 * past the next header, crafted by hand).  70,000 members force
 * the zip64 end records; a hand-built directory exercises the zip64 extra
 * field.  Every malformed variant gives its exact message.
 *
 * Independent checks: when python3 is present, its zipfile module tests
 * our zips (testzip(), the names) and writes zips of its own (seekable,
 * streamed with data descriptors, forced zip64) that we must read byte for
 * byte; without python3 only those checks are skipped, with a note.
 * Threads extract from one opened zip at once.
 */
#include "fmt/sketchy/doodle.h"
#include "rd.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* ---- sources ------------------------------------------------------------ */

struct src {
	const uint8_t *p;
	size_t n;
};

/* A reader over memory that, like the container's, refuses reads outside. */
static int mem_rd(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	const struct src *s = arg;
	if (off > s->n || n > s->n - off)
		return sv_err_set(err, -EIO, "test: read of %zu bytes at %" PRIu64 " past %zu",
				  n, off, s->n);
	if (n)
		memcpy(buf, s->p + off, n);
	return 0;
}

static int fd_rd(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	int fd = *(int *)arg;
	uint8_t *q = buf;
	while (n) {
		ssize_t k = pread(fd, q, n, (off_t)off);
		if (k <= 0)
			return sv_err_set(err, -EIO, "test: pread at %" PRIu64 " failed", off);
		q += k;
		off += (uint64_t)k;
		n -= (size_t)k;
	}
	return 0;
}

static struct sv_buf read_fd(int fd)
{
	struct sv_buf b;
	sv_buf_init(&b);
	uint8_t tmp[65536];
	ssize_t k;
	for (off_t off = 0; (k = pread(fd, tmp, sizeof tmp, off)) > 0; off += k)
		if (sv_buf_add(&b, tmp, (size_t)k))
			die("out of memory");
	return b;
}

static void write_file(const char *path, const struct sv_buf *b)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || sv_write_all(fd, b->p, b->len) || close(fd))
		die(path);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void set16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static char msgbuf[SV_ERR_MAX * 2];
static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt(const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsnprintf(msgbuf, sizeof msgbuf, f, ap);
	va_end(ap);
	return msgbuf;
}

/* (j*j + 7s + j/3) mod 256: the same formula in the Python script below. */
static void pattern(uint8_t *p, size_t n, unsigned s)
{
	for (size_t j = 0; j < n; j++)
		p[j] = (uint8_t)((j * j + s * 7 + j / 3) & 255);
}

static char tmpdir[64];
static char *tmp(const char *name)
{
	static char path[8][128];
	static unsigned k;
	char *p = path[k++ % 8];
	snprintf(p, 128, "%s/%s", tmpdir, name);
	return p;
}

/* ---- a sample of members --------------------------------------------------- */

struct member {
	const char *name;
	const uint8_t *p;
	size_t n;
	bool stored;
	uint16_t mtime, mdate; /* 0, 0: sv_zip_add's 1980-01-01 */
};

static uint8_t big[200000], zeros[4 << 20], text[3000];
enum { DOS_TIME = 12 << 11 | 34 << 5 | 56 / 2, DOS_DATE = (2020 - 1980) << 9 | 5 << 5 | 17 };

static const struct member sample[] = {
	{ "hello.txt", (const uint8_t *)"Hello, world\n", 13, true, 0, 0 },
	{ "big.bin", big, sizeof big, false, 0, 0 },
	{ "empty", (const uint8_t *)"", 0, true, 0, 0 },
	{ "empty.z", (const uint8_t *)"", 0, false, 0, 0 },
	{ "dir/\xc3\xbcn\xc3\xaf.txt", text, sizeof text, false, 0, 0 },
	{ "zeros.bin", zeros, sizeof zeros, false, 0, 0 }, /* deflate's best ratio */
	{ "dated.txt", (const uint8_t *)"dated\n", 6, true, DOS_TIME, DOS_DATE },
};
#define NSAMPLE (sizeof sample / sizeof sample[0])
static const char comment[] = "sample comment";

static void write_sample(struct sv_zip_writer *w)
{
	struct sv_err err = { 0 };
	for (size_t i = 0; i < NSAMPLE; i++) {
		const struct member *m = &sample[i];
		if (m->mdate)
			T_INT(0, sv_zip_add_dated(w, m->name, m->p, m->n, m->stored, m->mtime,
						  m->mdate, &err));
		else
			T_INT(0, sv_zip_add(w, m->name, m->p, m->n, m->stored, &err));
	}
	T_INT(0, sv_zip_finish(w, comment, sizeof comment - 1, &err));
	T_STR("", err.msg);
}

/* The sample as a zip in memory (with data descriptors if desc); *off, if
 * off is not NULL, gets the writer's offset after the end record. */
static struct sv_buf sample_mem(bool desc, uint64_t *off)
{
	struct sv_buf mem;
	sv_buf_init(&mem);
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, -1, &mem);
	w.descriptors = desc;
	write_sample(&w);
	if (off)
		*off = w.off;
	sv_zip_writer_fini(&w);
	return mem;
}

/* Reads the sample back from rd and checks everything, the local headers
 * and descriptors included (desc: written with data descriptors). */
static void check_sample(sv_zip_read_fn rd, void *arg, uint64_t size, bool desc)
{
	struct sv_zip z;
	struct sv_err err = { 0 };
	T_INT(0, sv_zip_open(&z, rd, arg, size, 100, &err));
	T_STR("", err.msg);
	T_UINT(NSAMPLE, z.n);
	T_UINT(sizeof comment - 1, z.comment_len);
	T_MEM(comment, z.comment, sizeof comment - 1);
	for (size_t i = 0; i < z.n && i < NSAMPLE; i++) {
		const struct member *m = &sample[i];
		const struct sv_zip_entry *e = &z.e[i];
		T_STR(m->name, e->name);
		T_UINT(m->stored ? 0 : 8, e->method);
		T_UINT(m->n, e->usize);
		if (m->stored)
			T_UINT(m->n, e->csize);
		uint32_t crc = (uint32_t)crc32_z(0, m->p, m->n);
		T_UINT(crc, e->crc);
		T_UINT(desc, !!(e->flags & 8));
		T_UINT(i == 4, !!(e->flags & 0x800)); /* the UTF-8 name */
		T_UINT(m->mdate ? m->mtime : 0, e->mtime);
		T_UINT(m->mdate ? m->mdate : 0x21, e->mdate);
		T_UINT(20, e->version_needed);
		struct sv_blob *b = NULL;
		T_INT(0, sv_zip_extract(e, rd, arg, size, m->n, &b, &err));
		if (b) {
			T_UINT(m->n, b->len);
			T_MEM(m->p, b->data, m->n);
		}
		sv_blob_unref(b);

		/* The local header, and the descriptor after the data. */
		uint64_t off = 0;
		uint8_t h[30], d[16];
		T_INT(0, sv_zip_data_offset(e, rd, arg, size, &off, &err));
		T_UINT(e->lho + 30 + strlen(m->name), off);
		T_INT(0, rd(arg, e->lho, h, sizeof h, &err));
		T_UINT(0x04034b50, get32(h));
		T_UINT(e->flags, get16(h + 6));
		T_UINT(desc ? 0 : crc, get32(h + 14));
		T_UINT(desc ? 0 : e->csize, get32(h + 18));
		T_UINT(desc ? 0 : e->usize, get32(h + 22));
		T_UINT(0, get16(h + 28));
		if (desc) {
			T_INT(0, rd(arg, off + e->csize, d, sizeof d, &err));
			T_UINT(0x08074b50, get32(d));
			T_UINT(crc, get32(d + 4));
			T_UINT(e->csize, get32(d + 8));
			T_UINT(e->usize, get32(d + 12));
		}
	}
	sv_zip_fini(&z);
}

/* ---- python3's zipfile, when present ---------------------------------------- */

static bool have_py;

static const char pyscript[] =
	"import sys, zipfile\n"
	"def pattern(n, s):\n"
	"    return bytes(((j * j + s * 7 + j // 3) & 255) for j in range(n))\n"
	"MEMBERS = [('a.txt', b'hello python\\n' * 100, zipfile.ZIP_DEFLATED),\n"
	"           ('b.bin', pattern(5000, 1), zipfile.ZIP_STORED),\n"
	"           ('c/d.bin', pattern(70000, 2), zipfile.ZIP_DEFLATED),\n"
	"           ('empty', b'', zipfile.ZIP_STORED)]\n"
	"def write(f, z64):\n"
	"    with zipfile.ZipFile(f, 'w') as z:\n"
	"        for name, data, method in MEMBERS:\n"
	"            zi = zipfile.ZipInfo(name, date_time=(2020, 5, 17, 12, 34, 56))\n"
	"            zi.compress_type = method\n"
	"            with z.open(zi, 'w', force_zip64=z64) as w:\n"
	"                w.write(data)\n"
	"mode = sys.argv[1]\n"
	"if mode == 'check':\n"
	"    with zipfile.ZipFile(sys.argv[2]) as z:\n"
	"        bad = z.testzip()\n"
	"        if bad is not None:\n"
	"            sys.exit('bad member: ' + bad)\n"
	"        for n in z.namelist():\n"
	"            print(n)\n"
	"elif mode == 'write':\n"
	"    write(sys.argv[2], sys.argv[3] == 'z64')\n"
	"else:\n"
	"    write(sys.stdout.buffer, sys.argv[2] == 'z64')  # a pipe: not seekable\n";

/* Runs the script with args; returns its stdout (NUL-terminated) and exit
 * status in *status. */
static struct sv_buf py(const char *args, int *status)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "PYTHONIOENCODING=utf-8 python3 %s %s", tmp("zipcheck.py"),
		 args);
	struct sv_buf b;
	sv_buf_init(&b);
	FILE *f = popen(cmd, "r");
	if (!f)
		die("popen");
	uint8_t tmpb[65536];
	size_t k;
	while ((k = fread(tmpb, 1, sizeof tmpb, f)) > 0)
		if (sv_buf_add(&b, tmpb, k))
			die("out of memory");
	*status = pclose(f);
	if (sv_buf_add(&b, "", 1))
		die("out of memory");
	b.len--;
	return b;
}

/* Python's testzip() passes on the zip at path and its names are these
 * (name(i) for i < n). */
static void py_check(const char *path, size_t n, const char *(*name)(size_t))
{
	if (!have_py)
		return;
	int st;
	struct sv_buf out = py(fmt("check %s", path), &st);
	T_INT(0, st);
	char *line = (char *)out.p, *nl;
	size_t i = 0, bad = 0;
	for (; line && (nl = strchr(line, '\n')); line = nl + 1, i++) {
		*nl = '\0';
		if (i >= n || strcmp(name(i), line))
			bad++;
	}
	T_UINT(n, i);
	T_UINT(0, bad);
	sv_buf_fini(&out);
}

static const char *sample_name(size_t i) { return sample[i].name; }

/* ---- the tests ---------------------------------------------------------------- */

static void test_roundtrip(void)
{
	for (int desc = 0; desc < 2; desc++) {
		uint64_t off;
		struct sv_buf mem = sample_mem(desc, &off);
		T_UINT(mem.len, off);
		struct src s = { mem.p, mem.len };
		check_sample(mem_rd, &s, mem.len, desc);

		/* The same to a file: the same bytes. */
		const char *path = tmp(desc ? "desc.zip" : "plain.zip");
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die(path);
		struct sv_zip_writer w;
		sv_zip_writer_init(&w, fd, NULL);
		w.descriptors = desc;
		write_sample(&w);
		sv_zip_writer_fini(&w);
		struct sv_buf f = read_fd(fd);
		T_UINT(mem.len, f.len);
		T_MEM(mem.p, f.p, mem.len);
		check_sample(fd_rd, &fd, f.len, desc);
		close(fd);
		py_check(path, NSAMPLE, sample_name);
		sv_buf_fini(&f);
		sv_buf_fini(&mem);
	}

	/* An empty zip is just the end record. */
	struct sv_buf mem;
	sv_buf_init(&mem);
	struct sv_zip_writer w;
	struct sv_err err = { 0 };
	sv_zip_writer_init(&w, -1, &mem);
	T_INT(0, sv_zip_finish(&w, NULL, 0, &err));
	sv_zip_writer_fini(&w);
	T_UINT(22, mem.len);
	struct src s = { mem.p, mem.len };
	struct sv_zip z;
	T_INT(0, sv_zip_open(&z, mem_rd, &s, mem.len, 10, &err));
	T_UINT(0, z.n);
	T_OK(!z.comment);
	sv_zip_fini(&z);
	sv_buf_fini(&mem);
}

/* Writes src's members raw into a file (fd >= 0) or memory, taking the data
 * from src_fd or src_mem, with ext_attr and version_made changed to show
 * they are kept.  Returns the zip's bytes. */
static struct sv_buf copy_raw(const struct sv_zip *zs, const struct src *s, int src_fd,
			      bool from_mem, bool to_file, const char *path)
{
	struct sv_buf mem;
	sv_buf_init(&mem);
	int fd = to_file ? open(path, O_RDWR | O_CREAT | O_TRUNC, 0644) : -1;
	if (to_file && fd < 0)
		die(path);
	struct sv_zip_writer w;
	struct sv_err err = { 0 };
	sv_zip_writer_init(&w, fd, to_file ? NULL : &mem);
	w.descriptors = true; /* ignored by add_raw */
	for (size_t i = 0; i < zs->n; i++) {
		struct sv_zip_entry e = zs->e[i];
		e.ext_attr = 0x81a40000u + (uint32_t)i;
		e.version_made = (uint16_t)(0x0314 + i);
		uint64_t off = 0;
		T_INT(0, sv_zip_data_offset(&e, mem_rd, (void *)s, s->n, &off, &err));
		T_INT(0, sv_zip_add_raw(&w, &e, off, src_fd, from_mem ? s->p : NULL, &err));
	}
	T_INT(0, sv_zip_finish(&w, NULL, 0, &err));
	T_STR("", err.msg);
	sv_zip_writer_fini(&w);
	if (to_file) {
		mem = read_fd(fd);
		close(fd);
	}
	return mem;
}

static void test_raw(void)
{
	/* The source has descriptors, which the copies lose. */
	struct sv_buf src = sample_mem(true, NULL);
	const char *src_path = tmp("src.zip");
	write_file(src_path, &src);
	int src_fd = open(src_path, O_RDONLY);
	if (src_fd < 0)
		die(src_path);
	struct src s = { src.p, src.len };
	struct sv_zip zs;
	struct sv_err err = { 0 };
	T_INT(0, sv_zip_open(&zs, mem_rd, &s, src.len, 100, &err));

	struct sv_buf out[4];
	out[0] = copy_raw(&zs, &s, src_fd, false, true, tmp("raw0.zip")); /* sv_copy_range */
	out[1] = copy_raw(&zs, &s, src_fd, false, false, NULL);         /* pread */
	out[2] = copy_raw(&zs, &s, -1, true, false, NULL);
	out[3] = copy_raw(&zs, &s, -1, true, true, tmp("raw3.zip"));
	for (int k = 1; k < 4; k++) {
		T_UINT(out[0].len, out[k].len);
		T_MEM(out[0].p, out[k].p, out[0].len);
	}

	struct src d = { out[0].p, out[0].len };
	struct sv_zip zd;
	T_INT(0, sv_zip_open(&zd, mem_rd, &d, d.n, 100, &err));
	T_UINT(zs.n, zd.n);
	for (size_t i = 0; i < zd.n && i < zs.n; i++) {
		const struct sv_zip_entry *a = &zs.e[i], *b = &zd.e[i];
		T_STR(a->name, b->name);
		T_UINT(a->flags & ~8u, b->flags);
		T_UINT(a->method, b->method);
		T_UINT(a->crc, b->crc);
		T_UINT(a->csize, b->csize);
		T_UINT(a->usize, b->usize);
		T_UINT(a->mtime, b->mtime);
		T_UINT(a->mdate, b->mdate);
		T_UINT(0x81a40000u + i, b->ext_attr);
		T_UINT(0x0314 + i, b->version_made);
		/* The compressed bytes are the source's, the sizes in the local
		 * header now. */
		uint64_t so = 0, dof = 0;
		T_INT(0, sv_zip_data_offset(a, mem_rd, &s, s.n, &so, &err));
		T_INT(0, sv_zip_data_offset(b, mem_rd, &d, d.n, &dof, &err));
		T_MEM(src.p + so, out[0].p + dof, (size_t)a->csize);
		T_UINT(a->crc, get32(out[0].p + b->lho + 14));
		T_UINT(a->csize, get32(out[0].p + b->lho + 18));
		T_UINT(a->usize, get32(out[0].p + b->lho + 22));
		struct sv_blob *blob = NULL;
		T_INT(0, sv_zip_extract(b, mem_rd, &d, d.n, UINT64_MAX, &blob, &err));
		if (blob)
			T_MEM(sample[i].p, blob->data, sample[i].n);
		sv_blob_unref(blob);
	}
	sv_zip_fini(&zd);
	py_check(tmp("raw0.zip"), NSAMPLE, sample_name);

	/* Failures: a source shorter than the entry, a bad descriptor, an
	 * unusable name, an output that cannot be written. */
	struct sv_buf mem;
	sv_buf_init(&mem);
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, -1, &mem);
	T_INT(-EIO, sv_zip_add_raw(&w, &zs.e[1], src.len - 10, src_fd, NULL, &err));
	T_STR("zip: big.bin: cannot copy its data: Input/output error", err.msg);
	T_INT(-EBADF, sv_zip_add_raw(&w, &zs.e[1], 0, 999, NULL, &err));
	T_STR("zip: big.bin: cannot copy its data: Bad file descriptor", err.msg);
	struct sv_zip_entry e = zs.e[0];
	e.name = (char *)"";
	T_INT(-EINVAL, sv_zip_add_raw(&w, &e, 0, -1, src.p, &err));
	T_STR("zip: a member name must be 1 to 65535 bytes, not 0", err.msg);
	sv_zip_writer_fini(&w);
	sv_buf_fini(&mem);
	int ro = open("/dev/null", O_RDONLY);
	sv_zip_writer_init(&w, ro, NULL);
	T_INT(-EBADF, sv_zip_add_raw(&w, &zs.e[0], 0, -1, src.p, &err));
	T_STR("zip: cannot write: Bad file descriptor", err.msg);
	T_INT(-EBADF, sv_zip_add_raw(&w, &zs.e[1], 0, src_fd, NULL, &err));
	T_INT(-EBADF, sv_zip_add(&w, "x", "x", 1, false, &err));
	T_INT(-EBADF, sv_zip_finish(&w, NULL, 0, &err));
	T_UINT(0, w.n);
	sv_zip_writer_fini(&w);
	close(ro);

	for (int k = 0; k < 4; k++)
		sv_buf_fini(&out[k]);
	sv_zip_fini(&zs);
	close(src_fd);
	sv_buf_fini(&src);
}

/* ---- members copied in runs (sv_zip_add_members) ------------------------------ */

/* Counts the reads sv_zip_add_members makes of the source: one local header
 * per run (its last member's), so the count is the number of runs. */
struct counted {
	struct src *s;
	unsigned reads;
};

static int counted_rd(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	struct counted *c = arg;
	c->reads++;
	return mem_rd(c->s, off, buf, n, err);
}

/* One step of a copy: source members [i, j), or (i == j) a new stored
 * member "new<i>" from sv_zip_add, as a commit writes a changed one. */
struct step {
	size_t i, j;
};

static const char new_data[] = "a member written anew\n";

/* Copies the steps from the source (src_fd, or its bytes when from_mem)
 * into a file (to_file, at path) or memory; *runs gets the source reads
 * (see struct counted).  Returns the zip's bytes. */
static struct sv_buf copy_members(const struct sv_zip *zs, struct src *s, int src_fd,
				  bool from_mem, bool to_file, const char *path,
				  const struct step *st, size_t nst, unsigned *runs)
{
	struct sv_buf mem;
	sv_buf_init(&mem);
	int fd = to_file ? open(path, O_RDWR | O_CREAT | O_TRUNC, 0644) : -1;
	if (to_file && fd < 0)
		die(path);
	struct sv_zip_writer w;
	struct sv_err err = { 0 };
	struct counted c = { s, 0 };
	sv_zip_writer_init(&w, fd, to_file ? NULL : &mem);
	for (size_t k = 0; k < nst; k++) {
		if (st[k].i == st[k].j) {
			char name[16];
			snprintf(name, sizeof name, "new%zu", st[k].i);
			T_INT(0, sv_zip_add(&w, name, new_data, sizeof new_data - 1, true, &err));
		} else {
			T_INT(0, sv_zip_add_members(&w, zs, st[k].i, st[k].j, counted_rd, &c, s->n,
						    from_mem ? -1 : src_fd, from_mem ? s->p : NULL,
						    &err));
		}
		T_STR("", err.msg);
	}
	T_INT(0, sv_zip_finish(&w, NULL, 0, &err));
	T_UINT(w.off, to_file ? (uint64_t)lseek(fd, 0, SEEK_CUR) : mem.len);
	sv_zip_writer_fini(&w);
	if (to_file) {
		mem = read_fd(fd);
		close(fd);
	}
	*runs = c.reads;
	return mem;
}

/* The names Python must list, for py_check. */
static const char *want_names[16];
static const char *want_name(size_t i) { return want_names[i]; }

/* Checks output entry b (its data at dof of out) against source entry a:
 * the same name, method, times, CRC, sizes and compressed bytes; copied as
 * it lies, the same local header (extra field included) and descriptor;
 * written alone (as by sv_zip_add_raw), a header of its own with the
 * sizes in it and no descriptor. */
static void check_member(const struct sv_buf *out, const struct sv_zip_entry *b,
			 uint64_t dof, const struct sv_zip_entry *a, const struct src *s,
			 bool alone)
{
	struct sv_err err = { 0 };
	T_STR(a->name, b->name);
	T_UINT(a->method, b->method);
	T_UINT(a->flags & ~(alone ? 8u : 0u), b->flags);
	T_UINT(a->mtime, b->mtime);
	T_UINT(a->mdate, b->mdate);
	T_UINT(a->crc, b->crc);
	T_UINT(a->csize, b->csize);
	T_UINT(a->usize, b->usize);
	uint64_t so = 0;
	T_INT(0, sv_zip_data_offset(a, mem_rd, (void *)s, s->n, &so, &err));
	if (dof + a->csize > out->len || so + a->csize > s->n)
		return;
	T_MEM(s->p + so, out->p + dof, (size_t)a->csize);
	uint64_t hl = so - a->lho;
	if (alone) {
		T_UINT(30 + strlen(a->name), dof - b->lho);
		T_UINT(a->crc, get32(out->p + b->lho + 14));
		T_UINT(a->csize, get32(out->p + b->lho + 18));
	} else {
		T_UINT(hl, dof - b->lho);
		if (dof - b->lho == hl)
			T_MEM(s->p + a->lho, out->p + b->lho, (size_t)hl);
		if ((a->flags & 8) && dof + a->csize + 16 <= out->len) {
			T_UINT(0x08074b50, get32(out->p + dof + a->csize));
			T_MEM(s->p + so + a->csize, out->p + dof + a->csize, 16);
		}
	}
	struct sv_blob *want = NULL, *got = NULL;
	T_INT(0, sv_zip_extract(a, mem_rd, (void *)s, s->n, UINT64_MAX, &want, &err));
	T_INT(0, sv_zip_extract(b, mem_rd, &(struct src){ out->p, out->len }, out->len,
				UINT64_MAX, &got, &err));
	T_STR("", err.msg);
	if (want && got) {
		T_UINT(want->len, got->len);
		T_MEM(want->data, got->data, want->len);
	}
	sv_blob_unref(got);
	sv_blob_unref(want);
}

/* Checks out (at path), a copy of the steps from the source: the members
 * in step order, each the source's (bit k of alone: output entry k was
 * written alone) or new; no member's data or descriptor runs into what
 * follows it; Python's zipfile agrees. */
static void check_copy(const struct sv_buf *out, const char *path, const struct sv_zip *zs,
		       const struct src *s, const struct step *st, size_t nst, unsigned alone)
{
	struct sv_err err = { 0 };
	struct src d = { out->p, out->len };
	struct sv_zip zd;
	T_INT(0, sv_zip_open(&zd, mem_rd, &d, d.n, 100, &err));
	T_STR("", err.msg);
	size_t k = 0;
	for (size_t q = 0; q < nst; q++) {
		bool fresh = st[q].i == st[q].j;
		for (size_t i = st[q].i; i < st[q].j || (fresh && i == st[q].i); i++, k++) {
			if (k >= zd.n)
				continue;
			const struct sv_zip_entry *b = &zd.e[k];
			if (k < 16)
				want_names[k] = b->name;
			uint64_t dof = 0;
			T_INT(0, sv_zip_data_offset(b, mem_rd, &d, d.n, &dof, &err));
			T_OK(dof + b->csize + (b->flags & 8 ? 16 : 0) <= b->span_end);
			if (!fresh) {
				check_member(out, b, dof, &zs->e[i], s, alone >> k & 1);
				continue;
			}
			struct sv_blob *blob = NULL;
			T_INT(0, sv_zip_extract(b, mem_rd, &d, d.n, UINT64_MAX, &blob, &err));
			T_OK(blob && blob->len == sizeof new_data - 1 &&
			     !memcmp(blob->data, new_data, blob->len));
			sv_blob_unref(blob);
		}
	}
	T_UINT(k, zd.n);
	if (path && zd.n == k && k <= 16)
		py_check(path, k, want_name);
	sv_zip_fini(&zd);
}

#define ANY_RUNS UINT_MAX /* how many reads the source takes is not checked */

/* Copies the steps in all four ways (file or memory, from a file or from
 * memory), checks they give the same bytes and that those are right
 * (which members went across as they lie, and which alone).  A failed
 * check is followed by a line naming the case, what.  Returns the output. */
static struct sv_buf copy_all_ways(const char *what, const struct sv_buf *src,
				   const struct step *st, size_t nst, unsigned runs,
				   unsigned alone)
{
	int fails = t_fails;
	char label[160];
	snprintf(label, sizeof label, "%s", what); /* what may be fmt()'s buffer */
	const char *src_path = tmp("members-src.zip");
	write_file(src_path, src);
	int src_fd = open(src_path, O_RDONLY);
	if (src_fd < 0)
		die(src_path);
	struct src s = { src->p, src->len };
	struct sv_zip zs;
	struct sv_err err = { 0 };
	T_INT(0, sv_zip_open(&zs, mem_rd, &s, s.n, 100, &err));
	T_STR("", err.msg);
	struct sv_buf out[4];
	unsigned reads[4];
	out[0] = copy_members(&zs, &s, src_fd, false, true, tmp("members.zip"), st, nst,
			      &reads[0]); /* copy_file_range */
	out[1] = copy_members(&zs, &s, src_fd, false, false, NULL, st, nst, &reads[1]);
	out[2] = copy_members(&zs, &s, -1, true, false, NULL, st, nst, &reads[2]);
	out[3] = copy_members(&zs, &s, -1, true, true, tmp("members3.zip"), st, nst,
			      &reads[3]);
	for (int k = 0; k < 4; k++) {
		/* (How often the source is read is the writer's business: it
		 * reads local headers through a window, many at a time.) */
		T_UINT(out[0].len, out[k].len);
		T_MEM(out[0].p, out[k].p, out[0].len);
	}
	check_copy(&out[0], tmp("members.zip"), &zs, &s, st, nst, alone);
	for (int k = 1; k < 4; k++)
		sv_buf_fini(&out[k]);
	sv_zip_fini(&zs);
	close(src_fd);
	if (t_fails > fails)
		fprintf(stderr, "test_zip: the failures above: sv_zip_add_members: %s\n", label);
	return out[0];
}

static void test_members(void)
{
	for (int desc = 0; desc < 2; desc++) {
		struct sv_buf src = sample_mem(desc, NULL);
		struct src s = { src.p, src.len };
		struct sv_zip zs;
		struct sv_err err = { 0 };
		T_INT(0, sv_zip_open(&zs, mem_rd, &s, s.n, 100, &err));
		for (size_t i = 0; i + 1 < zs.n; i++)
			T_UINT(zs.e[i + 1].lho, zs.e[i].span_end);
		T_UINT(zs.cd_off, zs.n ? zs.e[zs.n - 1].span_end : 0);

		/* All of them: one run, the source's bytes up to its directory. */
		const struct step all[] = { { 0, NSAMPLE } };
		const char *what = desc ? "the sample with descriptors" : "the sample";
		struct sv_buf out = copy_all_ways(what, &src, all, 1, 1, 0);
		T_OK(out.len >= zs.cd_off);
		if (out.len >= zs.cd_off)
			T_MEM(src.p, out.p, (size_t)zs.cd_off);
		sv_buf_fini(&out);

		/* Parts, with new members between them (a commit): a run per
		 * part; an empty range adds nothing. */
		const struct step parts[] = { { 1, 3 }, { 0, 0 }, { 4, NSAMPLE }, { 0, 1 },
					      { 3, 3 } }; /* 3 is left out */
		struct sv_buf empty;
		sv_buf_init(&empty);
		struct sv_zip_writer w;
		sv_zip_writer_init(&w, -1, &empty);
		T_INT(0, sv_zip_add_members(&w, &zs, 2, 2, mem_rd, &s, s.n, -1, src.p, &err));
		T_UINT(0, w.n);
		T_UINT(0, empty.len);
		sv_zip_writer_fini(&w);
		sv_buf_fini(&empty);
		out = copy_all_ways(fmt("%s in parts", what), &src, parts,
				    sizeof parts / sizeof parts[0], 3, 0);
		sv_buf_fini(&out);

		/* Members one by one: a run each. */
		struct step one[NSAMPLE];
		for (size_t i = 0; i < NSAMPLE; i++)
			one[i] = (struct step){ i, i + 1 };
		out = copy_all_ways(fmt("%s one by one", what), &src, one, NSAMPLE, NSAMPLE, 0);
		sv_buf_fini(&out);
		sv_zip_fini(&zs);
		sv_buf_fini(&src);
	}
}

/* ---- hand-built zips for runs: other orders, junk, overlaps -------------------- */

/* A stored member of a hand-built zip. */
struct piece {
	const char *name;
	const char *data;
	size_t covers;    /* bytes after its data that its sizes claim too (an
			   * overlap: they are the next member's header) */
	const char *junk; /* bytes after it, before the next member */
	bool desc;        /* a data descriptor follows the data */
};

/* Writes the pieces, each local header with a 9-byte timestamp extra field
 * (sv_zip_add_raw writes none: a member written alone shows), then a
 * central directory listing them in `order`. */
static struct sv_buf hand_zip(const struct piece *pc, size_t np, const size_t *order)
{
	struct sv_buf b;
	sv_buf_init(&b);
	uint64_t lho[16], dof[16];
	for (size_t i = 0; i < np && i < 16; i++) {
		uint8_t h[30] = { 0 };
		size_t nl = strlen(pc[i].name);
		sv_put_u32le(h, 0x04034b50);
		set16(h + 4, 20);
		set16(h + 6, pc[i].desc ? 8 : 0);
		set16(h + 12, 0x21);
		set16(h + 26, (uint16_t)nl);
		set16(h + 28, 9);
		lho[i] = b.len;
		sv_buf_add(&b, h, sizeof h);
		sv_buf_add(&b, pc[i].name, nl);
		sv_buf_add(&b, "\x55\x54\x05\x00\x01\x02\x03\x04\x05", 9);
		dof[i] = b.len;
		sv_buf_add(&b, pc[i].data, strlen(pc[i].data));
		if (pc[i].desc)
			sv_buf_add(&b, "PK\7\10" "crc csizeusize", 16);
		if (pc[i].junk)
			sv_buf_add(&b, pc[i].junk, strlen(pc[i].junk));
	}
	/* Backwards: a member's CRC covers the headers after it, done first. */
	uint32_t crc[16];
	for (size_t i = np; i-- > 0;) {
		size_t n = strlen(pc[i].data) + pc[i].covers;
		crc[i] = dof[i] + n <= b.len ? (uint32_t)crc32_z(0, b.p + dof[i], n) : 0;
		uint8_t *h = b.p + lho[i];
		if (pc[i].desc) {
			uint8_t *d = b.p + dof[i] + n;
			sv_put_u32le(d + 4, crc[i]);
			sv_put_u32le(d + 8, (uint32_t)n);
			sv_put_u32le(d + 12, (uint32_t)n);
		} else {
			sv_put_u32le(h + 14, crc[i]);
			sv_put_u32le(h + 18, (uint32_t)n);
			sv_put_u32le(h + 22, (uint32_t)n);
		}
	}
	uint64_t cd_off = b.len, cdrec[16];
	for (size_t k = 0; k < np && k < 16; k++) {
		size_t i = order ? order[k] : k;
		size_t nl = strlen(pc[i].name), n = strlen(pc[i].data) + pc[i].covers;
		uint8_t c[46] = { 0 };
		sv_put_u32le(c, 0x02014b50);
		set16(c + 4, 20);
		set16(c + 6, 20);
		set16(c + 8, pc[i].desc ? 8 : 0);
		set16(c + 14, 0x21);
		sv_put_u32le(c + 16, crc[i]);
		sv_put_u32le(c + 20, (uint32_t)n);
		sv_put_u32le(c + 24, (uint32_t)n);
		set16(c + 28, (uint16_t)nl);
		sv_put_u32le(c + 42, (uint32_t)lho[i]);
		cdrec[k] = b.len;
		sv_buf_add(&b, c, sizeof c);
		sv_buf_add(&b, pc[i].name, nl);
	}
	/* A member whose data runs into the directory (not as far as its own
	 * record's CRC): its CRC now. */
	for (size_t k = np; k-- > 0;) {
		size_t i = order ? order[k] : k;
		size_t n = strlen(pc[i].data) + pc[i].covers;
		if (dof[i] + n <= cd_off)
			continue;
		crc[i] = (uint32_t)crc32_z(0, b.p + dof[i], n);
		sv_put_u32le(b.p + lho[i] + 14, crc[i]);
		sv_put_u32le(b.p + cdrec[k] + 16, crc[i]);
	}
	uint8_t end[22] = { 0 };
	sv_put_u32le(end, 0x06054b50);
	set16(end + 8, (uint16_t)np);
	set16(end + 10, (uint16_t)np);
	sv_put_u32le(end + 12, (uint32_t)(b.len - cd_off));
	sv_put_u32le(end + 16, (uint32_t)cd_off);
	sv_buf_add(&b, end, sizeof end);
	return b;
}

static const struct piece five[] = {
	{ "a.txt", "alpha alpha alpha\n", 0, NULL, false },
	{ "b.txt", "bravo\n", 0, NULL, true },
	{ "c.txt", "charlie charlie\n", 0, NULL, false },
	{ "d.txt", "delta\n", 0, NULL, true },
	{ "e.txt", "echo echo echo echo\n", 0, NULL, false },
};

/* The central directory in another order than the members: runs follow the
 * file, so they break where the directory jumps. */
static void test_members_order(void)
{
	static const struct {
		size_t order[5];
		unsigned runs; /* of the whole directory */
	} cases[] = {
		{ { 0, 1, 2, 3, 4 }, 1 },
		{ { 3, 4, 0, 1, 2 }, 2 },
		{ { 4, 3, 2, 1, 0 }, 5 },
		{ { 0, 2, 1, 3, 4 }, 4 },
		{ { 1, 2, 0, 3, 4 }, 3 }, /* 2 ends where 3 begins, but 0 is between */
		{ { 2, 3, 4, 0, 1 }, 2 },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct sv_buf src = hand_zip(five, 5, cases[k].order);
		if (have_py) {
			write_file(tmp("hand.zip"), &src);
			for (size_t i = 0; i < 5; i++)
				want_names[i] = five[cases[k].order[i]].name;
			py_check(tmp("hand.zip"), 5, want_name);
		}
		const struct step all[] = { { 0, 5 } };
		struct sv_buf out = copy_all_ways(fmt("directory order %zu, whole", k), &src,
						  all, 1, cases[k].runs, 0);
		sv_buf_fini(&out);
		/* A run is cut where the caller's range ends. */
		const struct step split[] = { { 0, 2 }, { 2, 5 } };
		out = copy_all_ways(fmt("directory order %zu, split", k), &src, split, 2,
				    cases[k].runs + (k == 0 || k == 5), 0);
		sv_buf_fini(&out);
		sv_buf_fini(&src);
	}
}

/* Junk between members is copied with the member before it (the members
 * keep their places in the run); the run is still one piece. */
static void test_members_junk(void)
{
	static const struct piece junk[] = {
		{ "a.txt", "alpha\n", 0, "JUNK", false },
		{ "b.txt", "bravo\n", 0, "PK\3\4 not a header, nor the next member", true },
		{ "c.txt", "charlie\n", 0, NULL, false },
		{ "d.txt", "delta\n", 0, "junk before the directory", true },
	};
	struct sv_buf src = hand_zip(junk, 4, NULL);
	struct src s = { src.p, src.len };
	struct sv_zip zs;
	struct sv_err err = { 0 };
	T_INT(0, sv_zip_open(&zs, mem_rd, &s, s.n, 100, &err));
	T_UINT(4, zs.n);
	if (zs.n == 4) {
		T_UINT(zs.e[0].lho + 30 + 5 + 9 + 6 + 4, zs.e[0].span_end);
		T_UINT(zs.cd_off, zs.e[3].span_end);
	}
	const struct step all[] = { { 0, 4 } };
	struct sv_buf out = copy_all_ways("junk between members, whole", &src, all, 1, 1, 0);
	T_OK(out.len >= zs.cd_off);
	if (out.len >= zs.cd_off)
		T_MEM(src.p, out.p, (size_t)zs.cd_off); /* the junk too */
	sv_buf_fini(&out);
	const struct step parts[] = { { 1, 3 }, { 0, 0 }, { 3, 4 }, { 0, 1 } };
	out = copy_all_ways("junk between members, in parts", &src, parts, 4, 3, 0);
	sv_buf_fini(&out);
	sv_zip_fini(&zs);
	sv_buf_fini(&src);
}

/* A member whose data runs past the next local header (its sizes claim the
 * next member's header: crafted, a zip bomb's trick) is written alone, its
 * data copied as claimed, so the output never overlaps; the members around
 * it still go in runs. */
static void test_members_overlap(void)
{
	struct piece p[5];
	memcpy(p, five, sizeof p);
	struct sv_err err = { 0 };

	/* b's data takes in 10 bytes of c's header. */
	p[1].covers = 10;
	p[1].desc = false;
	struct sv_buf src = hand_zip(p, 5, NULL);
	struct src s = { src.p, src.len };
	struct sv_zip zs;
	T_INT(0, sv_zip_open(&zs, mem_rd, &s, s.n, 100, &err));
	struct sv_blob *blob = NULL;
	T_INT(0, sv_zip_extract(&zs.e[1], mem_rd, &s, s.n, 100, &blob, &err));
	T_OK(blob && blob->len == 16 && !memcmp(blob->data + 6, "PK\3\4", 4));
	sv_blob_unref(blob);
	sv_zip_fini(&zs);
	/* The last of a run: a, then b alone; then c, d, e. */
	const struct step ab[] = { { 0, 2 }, { 2, 5 } };
	struct sv_buf out = copy_all_ways("b overlaps c, the last of a run", &src, ab, 2, 2,
					  1u << 1);
	sv_buf_fini(&out);
	/* Alone in its range. */
	const struct step b[] = { { 1, 2 }, { 0, 0 }, { 3, 5 } };
	out = copy_all_ways("b overlaps c, alone in its range", &src, b, 3, 2, 1u << 0);
	sv_buf_fini(&out);
	/* Within a run: a, b alone, then c, d, e.  Copied as it lies, b would
	 * overlap c's header in the output too, which Python >= 3.12 refuses as
	 * a zip bomb (tests/fuzz/crashers/doodle-commit-overlap-in-run-*). */
	const struct step all[] = { { 0, 5 } };
	out = copy_all_ways("b overlaps c, within a run", &src, all, 1, ANY_RUNS, 1u << 1);
	sv_buf_fini(&out);
	sv_buf_fini(&src);

	/* a's data takes in all of b (its descriptor too) and 20 bytes of c,
	 * up to its CRC; a run that ends with b and a new member after it
	 * must not cut a short (copied with the run, its last 20 bytes would
	 * become the new member's header: a CRC mismatch). */
	memcpy(p, five, sizeof p);
	p[0].covers = 30 + 5 + 9 + strlen(p[1].data) + 16 + 20;
	src = hand_zip(p, 5, NULL);
	s = (struct src){ src.p, src.len };
	T_INT(0, sv_zip_open(&zs, mem_rd, &s, s.n, 100, &err));
	T_INT(0, sv_zip_extract(&zs.e[0], mem_rd, &s, s.n, 1000, &blob, &err));
	T_STR("", err.msg);
	sv_blob_unref(blob);
	sv_zip_fini(&zs);
	const struct step cut[] = { { 0, 2 }, { 0, 0 }, { 2, 5 } };
	out = copy_all_ways("a overlaps b and c, a run ends before c", &src, cut, 3,
			    ANY_RUNS, 1u << 0);
	sv_buf_fini(&out);
	sv_buf_fini(&src);

	/* The last member's data runs into the central directory. */
	memcpy(p, five, sizeof p);
	p[4].covers = 12;
	src = hand_zip(p, 5, NULL);
	out = copy_all_ways("e overlaps the directory", &src, all, 1, 1, 1u << 4);
	sv_buf_fini(&out);
	sv_buf_fini(&src);
}

/* What stops a copy: the last member of a run with a bad local header, an
 * unusable name, a source that cannot be read; each with its reason. */
static void test_members_bad(void)
{
	struct sv_buf src = hand_zip(five, 5, NULL);
	struct src s = { src.p, src.len };
	struct sv_zip zs;
	struct sv_err err = { 0 };
	T_INT(0, sv_zip_open(&zs, mem_rd, &s, s.n, 100, &err));
	struct sv_buf mem;
	sv_buf_init(&mem);
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, -1, &mem);
	uint64_t lho = zs.e[2].lho;
	src.p[lho] = 'X';
	T_INT(-EBADMSG, sv_zip_add_members(&w, &zs, 0, 3, mem_rd, &s, s.n, -1, src.p, &err));
	T_STR(fmt("zip: byte %" PRIu64 ": c.txt: local header has a bad signature", lho),
	      err.msg);
	T_UINT(0, w.n);
	T_UINT(0, mem.len);
	src.p[lho] = 'P';
	char *name = zs.e[1].name;
	zs.e[1].name = (char *)"";
	T_INT(-EINVAL, sv_zip_add_members(&w, &zs, 0, 5, mem_rd, &s, s.n, -1, src.p, &err));
	T_STR("zip: a member name must be 1 to 65535 bytes, not 0", err.msg);
	T_UINT(0, w.n);
	zs.e[1].name = name;
	int ro = open("/dev/null", O_RDONLY);
	T_INT(-EIO, sv_zip_add_members(&w, &zs, 0, 5, mem_rd, &s, s.n, ro, NULL, &err));
	T_STR("zip: cannot read the source", err.msg);
	sv_zip_writer_fini(&w);
	sv_buf_fini(&mem);
	sv_zip_writer_init(&w, ro, NULL);
	T_INT(-EBADF, sv_zip_add_members(&w, &zs, 0, 5, mem_rd, &s, s.n, -1, src.p, &err));
	T_STR("zip: cannot write: Bad file descriptor", err.msg);
	T_UINT(0, w.n);
	sv_zip_writer_fini(&w);
	close(ro);
	sv_zip_fini(&zs);
	sv_buf_fini(&src);
}

static char many_name_buf[32];
static const char *many_name(size_t i)
{
	snprintf(many_name_buf, sizeof many_name_buf, "m/%05zu", i);
	return many_name_buf;
}

/* Writes n one-byte stored members named many_name(i). */
static struct sv_buf write_many(size_t n)
{
	struct sv_buf mem;
	sv_buf_init(&mem);
	struct sv_zip_writer w;
	struct sv_err err = { 0 };
	sv_zip_writer_init(&w, -1, &mem);
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		uint8_t c = (uint8_t)i;
		rc = sv_zip_add(&w, many_name(i), &c, 1, true, &err);
	}
	T_INT(0, rc);
	T_INT(0, sv_zip_finish(&w, NULL, 0, &err));
	sv_zip_writer_fini(&w);
	return mem;
}

/*
 * The directory a writer hands over (sv_zip_writer_take) is the one
 * sv_zip_open reads from the bytes written, field by field, and knows where
 * each member's data lies: members copied from a zip whose local headers
 * carry an extra field (so a header is longer than the directory says),
 * members written new, a comment.  A copy from the handed-over directory
 * reads no local header.
 */
static void test_take(void)
{
	static const size_t order[] = { 0, 1, 2, 3, 4 };
	struct sv_buf src = hand_zip(five, 5, order);
	struct src s = { src.p, src.len };
	struct sv_zip zs;
	struct sv_err err = { 0 };
	T_INT(0, sv_zip_open(&zs, mem_rd, &s, s.n, 100, &err));
	struct sv_buf out;
	sv_buf_init(&out);
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, -1, &out);
	T_INT(0, sv_zip_add_members(&w, &zs, 0, 2, mem_rd, &s, s.n, -1, src.p, &err));
	T_INT(0, sv_zip_add(&w, "new/one.txt", text, 300, true, &err));
	T_INT(0, sv_zip_add_members(&w, &zs, 3, 5, mem_rd, &s, s.n, -1, src.p, &err));
	T_INT(0, sv_zip_add(&w, "new/two.bin", big, 5000, false, &err));
	T_INT(0, sv_zip_finish(&w, "a comment", 9, &err));
	struct sv_zip taken, read;
	T_INT(0, sv_zip_writer_take(&w, "a comment", 9, &taken, &err));
	T_UINT(0, w.n);
	sv_zip_writer_fini(&w);
	struct src o = { out.p, out.len };
	T_INT(0, sv_zip_open(&read, mem_rd, &o, o.n, 100, &err));
	T_UINT(read.n, taken.n);
	T_UINT(6, taken.n);
	T_UINT(read.cd_off, taken.cd_off);
	T_UINT(read.cd_size, taken.cd_size);
	T_UINT(read.comment_len, taken.comment_len);
	if (read.comment_len == taken.comment_len && taken.comment_len)
		T_MEM(read.comment, taken.comment, taken.comment_len);
	for (size_t i = 0; i < read.n && i < taken.n; i++) {
		const struct sv_zip_entry *a = &read.e[i], *b = &taken.e[i];
		T_STR(a->name, b->name);
		T_UINT(a->method, b->method);
		T_UINT(a->flags, b->flags);
		T_UINT(a->crc, b->crc);
		T_UINT(a->csize, b->csize);
		T_UINT(a->usize, b->usize);
		T_UINT(a->lho, b->lho);
		T_UINT(a->cd_off, b->cd_off);
		T_UINT(a->span_end, b->span_end);
		T_UINT(a->mtime, b->mtime);
		T_UINT(a->mdate, b->mdate);
		T_UINT(a->ext_attr, b->ext_attr);
		T_UINT(0, a->data); /* read: not known until its header is */
		uint64_t data = 0;
		T_INT(0, sv_zip_data_offset(a, mem_rd, &o, o.n, &data, &err));
		T_UINT(data, b->data);
		T_OK(b->data > b->lho);
	}
	/* The copied members' headers are 9 bytes longer than a new one's. */
	T_UINT(taken.e[0].lho + 30 + 5 + 9, taken.e[0].data);
	T_UINT(taken.e[2].lho + 30 + 11, taken.e[2].data);

	/* Copied again from the directory handed over: no header is read,
	 * and the bytes are the same up to the directory. */
	struct counted cr = { &o, 0 };
	struct sv_buf again;
	sv_buf_init(&again);
	sv_zip_writer_init(&w, -1, &again);
	T_INT(0, sv_zip_add_members(&w, &taken, 0, taken.n, counted_rd, &cr, out.len, -1, out.p,
				    &err));
	T_UINT(0, cr.reads);
	T_INT(0, sv_zip_finish(&w, "a comment", 9, &err));
	sv_zip_writer_fini(&w);
	T_UINT(out.len, again.len);
	if (out.len == again.len)
		T_MEM(out.p, again.p, out.len);
	/* And read back, each member whole (its CRC checked). */
	for (size_t i = 0; i < taken.n; i++) {
		struct sv_blob *b = NULL;
		T_INT(0, sv_zip_extract(&taken.e[i], mem_rd, &o, o.n, 1 << 20, &b, &err));
		T_UINT(taken.e[i].usize, b ? b->len : 0);
		sv_blob_unref(b);
	}
	sv_buf_fini(&again);
	sv_zip_fini(&read);
	sv_zip_fini(&taken);
	sv_zip_fini(&zs);
	sv_buf_fini(&out);
	sv_buf_fini(&src);
}

static void test_many(struct sv_buf *z64out)
{
	struct sv_err err = { 0 };
	struct sv_zip z;
	/* 65534 entries still fit the end record. */
	struct sv_buf m = write_many(65534);
	const uint8_t *end = m.p + m.len - 22;
	T_UINT(65534, get16(end + 10));
	T_OK(get32(end - 20) != 0x07064b50);
	struct src s = { m.p, m.len };
	T_INT(0, sv_zip_open(&z, mem_rd, &s, m.len, 100000, &err));
	T_UINT(65534, z.n);
	sv_zip_fini(&z);
	if (have_py) {
		write_file(tmp("65534.zip"), &m);
		py_check(tmp("65534.zip"), 65534, many_name);
	}
	sv_buf_fini(&m);

	/* 70,000 need the zip64 end record and locator. */
	m = write_many(70000);
	end = m.p + m.len - 22;
	T_UINT(0xFFFF, get16(end + 8));
	T_UINT(0xFFFF, get16(end + 10));
	T_UINT(0x07064b50, get32(end - 20));
	T_UINT(0x06064b50, get32(end - 20 - 56));
	s = (struct src){ m.p, m.len };
	T_INT(0, sv_zip_open(&z, mem_rd, &s, m.len, 70000, &err));
	T_STR("", err.msg);
	T_UINT(70000, z.n);
	T_UINT(m.len - 22 - 20 - 56, z.cd_off + z.cd_size);
	size_t bad = 0;
	for (size_t i = 0; i < z.n; i++)
		if (strcmp(many_name(i), z.e[i].name) || z.e[i].usize != 1)
			bad++;
	T_UINT(0, bad);
	struct sv_blob *b = NULL;
	T_INT(0, sv_zip_extract(&z.e[69999], mem_rd, &s, m.len, 1, &b, &err));
	T_OK(b && b->len == 1 && b->data[0] == (uint8_t)69999);
	sv_blob_unref(b);
	sv_zip_fini(&z);
	T_INT(-EFBIG, sv_zip_open(&z, mem_rd, &s, m.len, 69999, &err));
	T_STR("zip: 70000 entries, more than the limit of 69999", err.msg);
	sv_zip_fini(&z);
	if (have_py) {
		write_file(tmp("70000.zip"), &m);
		py_check(tmp("70000.zip"), 70000, many_name);
	}
	*z64out = m;
}

/* A zip whose one central record uses the zip64 extra field for the fields
 * in marks (1 usize, 2 csize, 4 lho), after an unrelated extra field;
 * short_by cuts the zip64 field.  The member is at offset 5 (a prefix). */
static struct sv_buf hand_z64(unsigned marks, size_t short_by)
{
	static const char data[] = "zip64 extras";
	const size_t n = sizeof data - 1, lho = 5;
	uint32_t crc = (uint32_t)crc32_z(0, (const uint8_t *)data, n);
	uint8_t h[30 + 6] = { 0 }, c[46 + 6 + 9 + 28] = { 0 }, end[22] = { 0 };
	sv_put_u32le(h, 0x04034b50);
	set16(h + 4, 20);
	sv_put_u32le(h + 14, crc);
	sv_put_u32le(h + 18, (uint32_t)n);
	sv_put_u32le(h + 22, (uint32_t)n);
	set16(h + 26, 6);
	memcpy(h + 30, "x.data", 6);

	uint8_t x[28], *q = x + 4;
	memset(x, 0, sizeof x);
	set16(x, 1);
	for (unsigned bit = 1; bit <= 4; bit <<= 1) {
		if (!(marks & bit))
			continue;
		sv_put_u32le(q, bit == 4 ? (uint32_t)lho : (uint32_t)n);
		q += 8;
	}
	size_t xl = (size_t)(q - x) - short_by;
	set16(x + 2, (uint16_t)(xl - 4));

	sv_put_u32le(c, 0x02014b50);
	set16(c + 4, 45);
	set16(c + 6, 45);
	sv_put_u32le(c + 16, crc);
	sv_put_u32le(c + 20, marks & 2 ? 0xFFFFFFFFu : (uint32_t)n);
	sv_put_u32le(c + 24, marks & 1 ? 0xFFFFFFFFu : (uint32_t)n);
	set16(c + 28, 6);
	set16(c + 30, (uint16_t)(9 + xl));
	sv_put_u32le(c + 42, marks & 4 ? 0xFFFFFFFFu : (uint32_t)lho);
	memcpy(c + 46, "x.data", 6);
	memcpy(c + 52, "\x55\x54\x05\x00\x01\x02\x03\x04\x05", 9); /* a timestamp field */
	memcpy(c + 61, x, xl);
	size_t clen = 61 + xl;

	struct sv_buf b;
	sv_buf_init(&b);
	sv_buf_add(&b, "junk!", lho);
	sv_buf_add(&b, h, sizeof h);
	sv_buf_add(&b, data, n);
	uint32_t cd_off = (uint32_t)b.len;
	sv_buf_add(&b, c, clen);
	sv_put_u32le(end, 0x06054b50);
	set16(end + 8, 1);
	set16(end + 10, 1);
	sv_put_u32le(end + 12, (uint32_t)clen);
	sv_put_u32le(end + 16, cd_off);
	sv_buf_add(&b, end, sizeof end);
	return b;
}

static void test_z64_extra(void)
{
	struct sv_err err = { 0 };
	static const unsigned marks[] = { 7, 4, 5, 3, 0 };
	for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
		struct sv_buf m = hand_z64(marks[k], 0);
		struct src s = { m.p, m.len };
		struct sv_zip z;
		T_INT(0, sv_zip_open(&z, mem_rd, &s, m.len, 10, &err));
		T_UINT(1, z.n);
		if (z.n == 1) {
			T_STR("x.data", z.e[0].name);
			T_UINT(12, z.e[0].usize);
			T_UINT(12, z.e[0].csize);
			T_UINT(5, z.e[0].lho);
			struct sv_blob *b = NULL;
			T_INT(0, sv_zip_extract(&z.e[0], mem_rd, &s, m.len, 100, &b, &err));
			T_OK(b && b->len == 12 && !memcmp(b->data, "zip64 extras", 12));
			sv_blob_unref(b);
		}
		sv_zip_fini(&z);
		sv_buf_fini(&m);
	}
	struct sv_buf m = hand_z64(7, 1);
	struct src s = { m.p, m.len };
	struct sv_zip z;
	T_INT(-EBADMSG, sv_zip_open(&z, mem_rd, &s, m.len, 10, &err));
	T_STR("zip: byte 53: central directory record 0: zip64 extra field too short", err.msg);
	sv_zip_fini(&z);
	sv_buf_fini(&m);
}

/* Python writes, we read: seekable and streamed, plain and forced zip64. */
static void test_python_writes(void)
{
	if (!have_py)
		return;
	static uint8_t a[1300], bb[5000], cd[70000];
	for (size_t i = 0; i < 100; i++)
		memcpy(a + 13 * i, "hello python\n", 13);
	pattern(bb, sizeof bb, 1);
	pattern(cd, sizeof cd, 2);
	const struct member want[] = {
		{ "a.txt", a, sizeof a, false, 0, 0 },
		{ "b.bin", bb, sizeof bb, true, 0, 0 },
		{ "c/d.bin", cd, sizeof cd, false, 0, 0 },
		{ "empty", (const uint8_t *)"", 0, true, 0, 0 },
	};
	for (int k = 0; k < 4; k++) {
		int st;
		const char *path = tmp("py.zip");
		const char *z64 = k & 1 ? "z64" : "plain";
		struct sv_buf out = py(k < 2 ? fmt("write %s %s", path, z64) : fmt("stream %s", z64),
				       &st);
		T_INT(0, st);
		if (k < 2) {
			sv_buf_fini(&out);
			int fd = open(path, O_RDONLY);
			if (fd < 0)
				die(path);
			out = read_fd(fd);
			close(fd);
		}
		bool streamed = k >= 2;
		struct src s = { out.p, out.len };
		struct sv_zip z;
		struct sv_err err = { 0 };
		T_INT(0, sv_zip_open(&z, mem_rd, &s, out.len, 10, &err));
		T_STR("", err.msg);
		T_UINT(4, z.n);
		for (size_t i = 0; i < z.n && i < 4; i++) {
			const struct sv_zip_entry *e = &z.e[i];
			T_STR(want[i].name, e->name);
			T_UINT(want[i].stored ? 0 : 8, e->method);
			T_UINT(want[i].n, e->usize);
			T_UINT(streamed, !!(e->flags & 8));
			T_UINT(DOS_TIME, e->mtime);
			T_UINT(DOS_DATE, e->mdate);
			struct sv_blob *b = NULL;
			T_INT(0, sv_zip_extract(e, mem_rd, &s, out.len, 1 << 20, &b, &err));
			T_STR("", err.msg);
			if (b) {
				T_UINT(want[i].n, b->len);
				T_MEM(want[i].p, b->data, want[i].n);
			}
			sv_blob_unref(b);
		}
		sv_zip_fini(&z);
		sv_buf_fini(&out);
	}
}

/* ---- malformed input ----------------------------------------------------------- */

static struct sv_buf base;      /* hello.txt (stored), big.bin, z.txt (deflated) */
static struct sv_zip base_z;    /* base, opened */
static uint64_t base_end;       /* its end record */
static uint64_t base_data[3];   /* its data offsets */

/* Opens p[0..n) with max_entries 100 and closes it; returns the code. */
static int try_open(const uint8_t *p, size_t n, uint64_t max_entries, struct sv_err *err)
{
	struct src s = { p, n };
	struct sv_zip z;
	sv_err_clear(err);
	int rc = sv_zip_open(&z, mem_rd, &s, n, max_entries, err);
	sv_zip_fini(&z);
	return rc;
}

/* Opens p (which must work) and extracts entry i with limit max. */
static int try_extract(const uint8_t *p, size_t i, uint64_t max, struct sv_err *err)
{
	struct src s = { p, base.len };
	struct sv_zip z;
	struct sv_blob *b = NULL;
	int rc = sv_zip_open(&z, mem_rd, &s, base.len, 100, err);
	T_INT(0, rc);
	if (!rc)
		rc = sv_zip_extract(&z.e[i], mem_rd, &s, base.len, max, &b, err);
	T_OK(!b == !!rc);
	sv_blob_unref(b);
	sv_zip_fini(&z);
	return rc;
}


/* One malformed zip: `from` with `width` bytes at `at` set to `value`
 * (little-endian; width 0: as it is), `cut` bytes cut from its end,
 * opened (member OPEN, max the entry limit) or member `member` extracted
 * (max the size limit); the answer: rc and the message (exact, or, led
 * by '~', a pattern whose '*' stands for what the input does not fix). */
#define OPEN (-1)
struct bad_case {
	const char *what;
	const struct sv_buf *from;
	uint64_t at, value, cut, max;
	int width, member, rc;
	char msg[320];
};

struct bad_table {
	struct bad_case *v;
	size_t n, cap;
};

static void bad(struct bad_table *t, const char *what, const struct sv_buf *from, uint64_t at,
		int width, uint64_t value, uint64_t cut, int member, uint64_t max, int rc,
		const char *f, ...) __attribute__((format(printf, 11, 12)));
static void bad(struct bad_table *t, const char *what, const struct sv_buf *from, uint64_t at,
		int width, uint64_t value, uint64_t cut, int member, uint64_t max, int rc,
		const char *f, ...)
{
	if (sv_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v))
		die("out of memory");
	struct bad_case *c = &t->v[t->n++];
	*c = (struct bad_case){what, from, at, value, cut, max, width, member, rc, ""};
	va_list ap;
	va_start(ap, f);
	vsnprintf(c->msg, sizeof c->msg, f, ap);
	va_end(ap);
}

static void bad_run(const struct bad_case *c)
{
	uint8_t *m = malloc(c->from->len);
	if (!m)
		die("out of memory");
	memcpy(m, c->from->p, c->from->len);
	for (int i = 0; i < c->width; i++)
		m[c->at + (uint64_t)i] = (uint8_t)(c->value >> (8 * i));
	struct sv_err err;
	sv_err_clear(&err);
	int rc = c->member == OPEN ? try_open(m, c->from->len - c->cut, c->max, &err)
				   : try_extract(m, (size_t)c->member, c->max, &err);
	if (rc != c->rc)
		fprintf(stderr, "zip bad case: %s\n", c->what);
	T_INT(c->rc, rc);
	if (c->msg[0] == '~') {
		if (fnmatch(c->msg + 1, err.msg, 0))
			fprintf(stderr, "zip bad case %s: \"%s\" is not \"%s\"\n", c->what, err.msg,
				c->msg + 1);
		T_OK(!fnmatch(c->msg + 1, err.msg, 0));
	}
	else if (c->rc)
		T_STR(c->msg, err.msg);
	free(m);
}

static void test_bad(const struct sv_buf *z64)
{
	struct sv_err err = { 0 };
	static const char *const end_msg =
		"zip: no end of central directory record (not a zip file, or truncated)";
	static uint8_t zz[1000];
	memset(zz, 'z', sizeof zz);
	struct sv_zip_writer w;
	sv_buf_init(&base);
	sv_zip_writer_init(&w, -1, &base);
	T_INT(0, sv_zip_add(&w, "hello.txt", "Hello, world\n", 13, true, &err));
	T_INT(0, sv_zip_add(&w, "big.bin", big, 100000, false, &err));
	T_INT(0, sv_zip_add(&w, "z.txt", zz, sizeof zz, false, &err));
	T_INT(0, sv_zip_finish(&w, NULL, 0, &err));
	sv_zip_writer_fini(&w);
	struct src s = { base.p, base.len };
	T_INT(0, sv_zip_open(&base_z, mem_rd, &s, base.len, 100, &err));
	base_end = base.len - 22;
	for (size_t i = 0; i < 3; i++)
		T_INT(0, sv_zip_data_offset(&base_z.e[i], mem_rd, &s, base.len, &base_data[i], &err));
	const struct sv_zip_entry *e = base_z.e;
	uint8_t *m;

	/* Junk after the end record is tolerated. */
	m = malloc(base.len + 4);
	if (!m)
		die("out of memory");
	memcpy(m, base.p, base.len);
	memcpy(m + base.len, "junk", 4);
	T_INT(0, try_open(m, base.len + 4, 100, &err));
	free(m);

	/* A comment holding a fake end record whose own (empty) comment fits:
	 * the real one, which ends the file exactly, wins.  (Python's zipfile
	 * takes the fake.) */
	static const char fake[] = "fake: PK\5\6" "0123456789abcdef" "\0\0" "; the real one ends here";
	struct sv_buf f;
	sv_buf_init(&f);
	sv_zip_writer_init(&w, -1, &f);
	T_INT(0, sv_zip_add(&w, "hello.txt", "Hello, world\n", 13, true, &err));
	T_INT(0, sv_zip_finish(&w, fake, sizeof fake - 1, &err));
	sv_zip_writer_fini(&w);
	s = (struct src){ f.p, f.len };
	struct sv_zip z;
	T_INT(0, sv_zip_open(&z, mem_rd, &s, f.len, 100, &err));
	T_UINT(1, z.n);
	T_UINT(sizeof fake - 1, z.comment_len);
	T_MEM(fake, z.comment, sizeof fake - 1);
	sv_zip_fini(&z);
	sv_buf_fini(&f);

	/* Every malformed variant below, as a table: the base (or the
	 * 70,000-member zip64) with one field patched, opened or one member
	 * extracted, and the exact answer. */
	uint64_t loc = z64->len - 22 - 20, e64 = loc - 56;
	struct bad_table t = {0};
	/* Truncated, or no end record. */
	bad(&t, "half the file", &base, 0, 0, 0, base.len - base.len / 2, OPEN, 100, -EBADMSG, "%s", end_msg);
	bad(&t, "less than an end record", &base, 0, 0, 0, base.len - 21, OPEN, 100, -EBADMSG, "%s", end_msg);
	bad(&t, "nothing", &base, 0, 0, 0, base.len, OPEN, 100, -EBADMSG, "%s", end_msg);
	bad(&t, "the end record's signature", &base, base_end + 3, 1, 7, 0, OPEN, 100, -EBADMSG, "%s",
	    end_msg);
	bad(&t, "a comment past the end", &base, base_end + 20, 2, 1, 0, OPEN, 100, -EBADMSG, "%s",
	    end_msg);
	/* The directory out of range, or too small for its count. */
	bad(&t, "the directory's offset past the end record", &base, base_end + 16, 4, base_end - 10, 0,
	    OPEN, 100, -EBADMSG, "zip: byte %" PRIu64 ": central directory lies outside the file",
	    base_end);
	bad(&t, "the directory's size past the file", &base, base_end + 12, 4, 0xFFFFFFF0u, 0, OPEN,
	    100, -EBADMSG, "zip: byte %" PRIu64 ": central directory lies outside the file",
	    base_end);
	bad(&t, "more entries than the directory holds", &base, base_end + 10, 2, 1000, 0, OPEN, 2000,
	    -EBADMSG, "zip: byte %" PRIu64 ": 1000 entries cannot fit in a central directory of %"
	    PRIu64 " bytes", base_end, base_z.cd_size);
	bad(&t, "more entries than the limit", &base, 0, 0, 0, 0, OPEN, 2, -EFBIG,
	    "zip: 3 entries, more than the limit of 2");
	/* Central records. */
	bad(&t, "a central record's signature", &base, e[1].cd_off, 1, 'X', 0, OPEN, 100, -EBADMSG,
	    "zip: byte %" PRIu64 ": central directory record 1: bad signature", e[1].cd_off);
	bad(&t, "a central record's name past the directory", &base, e[2].cd_off + 28, 2, 1000, 0,
	    OPEN, 100, -EBADMSG, "zip: byte %" PRIu64 ": central directory record 2: runs past the "
	    "end of the directory", e[2].cd_off);
	/* Zip64 end records that do not add up (the 70,000-member zip). */
	bad(&t, "the zip64 locator outside the file", z64, loc + 8, 4, loc - 55, 0, OPEN, 100000,
	    -EBADMSG, "zip: byte %" PRIu64 ": zip64 end record locator points outside the file",
	    loc);
	bad(&t, "the zip64 end record's signature", z64, e64, 1, 'X', 0, OPEN, 100000, -EBADMSG,
	    "zip: byte %" PRIu64 ": zip64 end record: bad signature", e64);
	bad(&t, "more zip64 entries than the directory holds", z64, e64 + 32, 4, 2000000, 0, OPEN,
	    10000000, -EBADMSG, "~zip: byte %" PRIu64 ": 2000000 entries cannot fit in a central "
	    "directory of * bytes", e64);
	bad(&t, "the zip64 directory past 4 GiB", z64, e64 + 52, 4, 1, 0, OPEN, 100000, -EBADMSG,
	    "zip: byte %" PRIu64 ": central directory lies outside the file", e64);
	/* Local headers: only that entry fails, and only when read. */
	bad(&t, "a local header's signature", &base, 0, 1, 'X', 0, 0, 100, -EBADMSG,
	    "zip: byte 0: hello.txt: local header has a bad signature");
	bad(&t, "another member beside it", &base, 0, 1, 'X', 0, 1, 100000, 0, "%s", "");
	bad(&t, "a local header outside the file", &base, e[0].cd_off + 42, 4, base.len - 29, 0, 0,
	    100, -EBADMSG, "zip: byte %zu: hello.txt: local header lies outside the file",
	    base.len - 29);
	bad(&t, "data past the end of the file", &base, e[2].cd_off + 20, 4,
	    base.len - base_data[2] + 1, 0, 2, 100000, -EBADMSG, "zip: byte %" PRIu64 ": z.txt: "
	    "data (%" PRIu64 " bytes) runs past the end of the file", base_data[2],
	    base.len - base_data[2] + 1);
	/* Extraction. */
	bad(&t, "a CRC", &base, e[1].cd_off + 16, 4, e[1].crc ^ 1, 0, 1, 100000, -EBADMSG,
	    "zip: big.bin: CRC mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")",
	    e[1].crc ^ 1, e[1].crc);
	bad(&t, "a method", &base, e[1].cd_off + 10, 2, 12, 0, 1, 100000, -ENOTSUP,
	    "zip: big.bin: compression method 12 not supported");
	bad(&t, "encryption", &base, e[1].cd_off + 8, 2, 1, 0, 1, 100000, -ENOTSUP,
	    "zip: big.bin is encrypted");
	bad(&t, "a stored member's sizes", &base, e[0].cd_off + 24, 4, 14, 0, 0, 100, -EBADMSG,
	    "zip: hello.txt: stored, but its compressed size 13 is not its size 14");
	bad(&t, "a size short of the data", &base, e[1].cd_off + 24, 4, 99999, 0, 1, 100000,
	    -EBADMSG, "zip: big.bin: deflate data inflates past 99999 bytes");
	bad(&t, "a size past the data", &base, e[1].cd_off + 24, 4, 100001, 0, 1, 100001, -EBADMSG,
	    "zip: big.bin: deflate data ends after 100000 of 100001 bytes");
	bad(&t, "deflate data cut short", &base, e[1].cd_off + 20, 4, e[1].csize / 2, 0, 1, 100000,
	    -EBADMSG, "~zip: big.bin: deflate data is cut short after * of 100000 bytes");
	bad(&t, "a reserved block type", &base, base_data[1], 1, 0xFF, 0, 1, 100000, -EBADMSG,
	    "zip: big.bin: corrupt deflate data (invalid block type)");
	bad(&t, "a size no deflate reaches", &base, e[2].cd_off + 24, 4, e[2].csize * 1032 + 65, 0, 2,
	    UINT64_MAX, -EBADMSG, "zip: z.txt: %" PRIu64 " compressed bytes cannot inflate to %" PRIu64,
	    e[2].csize, e[2].csize * 1032 + 65);
	bad(&t, "a member past the limit", &base, 0, 0, 0, 0, 1, 99999, -EFBIG,
	    "zip: big.bin: 100000 bytes, more than the limit of 99999");
	T_UINT(29, t.n);
	for (size_t i = 0; i < t.n; i++)
		bad_run(&t.v[i]);
	free(t.v);

	sv_zip_fini(&base_z);
	sv_buf_fini(&base);
}

/* Extraction keeps no state: threads extracting the same entries at once
 * all get the right bytes. */
struct job {
	const struct sv_zip *z;
	const struct src *s;
	int bad;
};

static void *extract_all(void *arg)
{
	struct job *j = arg;
	for (int round = 0; round < 4; round++)
		for (size_t i = 0; i < j->z->n; i++) {
			struct sv_blob *b = NULL;
			struct sv_err err;
			if (sv_zip_extract(&j->z->e[i], mem_rd, (void *)j->s, j->s->n, UINT64_MAX,
					   &b, &err) ||
			    b->len != sample[i].n || memcmp(b->data, sample[i].p, b->len))
				j->bad++;
			sv_blob_unref(b);
		}
	return NULL;
}

static void test_threads(void)
{
	struct sv_buf mem = sample_mem(false, NULL);
	struct src s = { mem.p, mem.len };
	struct sv_zip z;
	struct sv_err err = { 0 };
	T_INT(0, sv_zip_open(&z, mem_rd, &s, mem.len, 100, &err));
	pthread_t th[4];
	struct job jobs[4];
	for (int k = 0; k < 4; k++) {
		jobs[k] = (struct job){ &z, &s, 0 };
		T_INT(0, pthread_create(&th[k], NULL, extract_all, &jobs[k]));
	}
	for (int k = 0; k < 4; k++) {
		pthread_join(th[k], NULL);
		T_INT(0, jobs[k].bad);
	}
	sv_zip_fini(&z);
	sv_buf_fini(&mem);
}

static void test_writer_limits(void)
{
	struct sv_err err = { 0 };
	struct sv_buf mem;
	sv_buf_init(&mem);
	struct sv_zip_writer w;
	sv_zip_writer_init(&w, -1, &mem);
	T_INT(-EINVAL, sv_zip_add(&w, "", "x", 1, true, &err));
	T_STR("zip: a member name must be 1 to 65535 bytes, not 0", err.msg);
	char *name = malloc(65537);
	if (!name)
		die("out of memory");
	memset(name, 'n', 65536);
	name[65536] = '\0';
	T_INT(-EINVAL, sv_zip_add(&w, name, "x", 1, false, &err));
	T_STR("zip: a member name must be 1 to 65535 bytes, not 65536", err.msg);
	name[65535] = '\0';
	T_INT(0, sv_zip_add(&w, name, "x", 1, false, &err));
	T_INT(-EINVAL, sv_zip_finish(&w, name, 65536, &err));
	T_STR("zip: a comment of 65536 bytes is over 65535", err.msg);
	T_INT(0, sv_zip_finish(&w, name, 65535, &err));
	sv_zip_writer_fini(&w);
	struct src s = { mem.p, mem.len };
	struct sv_zip z;
	T_INT(0, sv_zip_open(&z, mem_rd, &s, mem.len, 10, &err));
	T_UINT(1, z.n);
	T_STR(name, z.n ? z.e[0].name : NULL);
	T_UINT(65535, z.comment_len);
	sv_zip_fini(&z);
	sv_zip_fini(NULL);
	sv_zip_writer_fini(NULL);
	free(name);
	sv_buf_fini(&mem);
}

/*
 * The central directory is read a megabyte at a time: records whose long
 * names straddle the window's edges (names of 1 to 65,535 bytes, 2.2 MB of
 * directory) read back whole, each name and size; a directory cut inside
 * its last record's name says where, as a whole read did.
 */
static char *long_name(size_t i)
{
	static const size_t lens[] = { 65535, 1, 40000, 7, 65535, 30000, 65535, 12, 50000 };
	size_t n = lens[i % 9];
	char *p = malloc(n + 1);
	for (size_t k = 0; k < n; k++)
		p[k] = (char)('a' + (i + k) % 26);
	char tag[24];
	int t = snprintf(tag, sizeof tag, "%zu/", i);
	if (t > 0 && n >= (size_t)t)
		memcpy(p, tag, (size_t)t); /* unique but the one-byte names */
	p[n] = '\0';
	return p;
}

static void test_directory_window(void)
{
	struct sv_buf mem;
	sv_buf_init(&mem);
	struct sv_zip_writer w;
	struct sv_err err = { 0 };
	sv_zip_writer_init(&w, -1, &mem);
	enum { N = 63 };
	for (size_t i = 0; i < N; i++) {
		char *nm = long_name(i);
		uint8_t c = (uint8_t)i;
		T_INT(0, sv_zip_add(&w, nm, &c, 1, i % 2, &err));
		free(nm);
	}
	T_INT(0, sv_zip_finish(&w, NULL, 0, &err));
	sv_zip_writer_fini(&w);
	struct src s = { mem.p, mem.len };
	struct sv_zip z;
	T_INT(0, sv_zip_open(&z, mem_rd, &s, mem.len, 100, &err));
	T_STR("", err.msg);
	T_UINT(N, z.n);
	T_OK(z.cd_size > 2u << 20);
	size_t bad = 0;
	for (size_t i = 0; i < z.n; i++) {
		char *nm = long_name(i);
		bad += strcmp(nm, z.e[i].name) || z.e[i].usize != 1 ||
		       (i + 1 < z.n ? z.e[i + 1].lho : z.cd_off) != z.e[i].span_end;
		free(nm);
	}
	T_UINT(0, bad);
	struct sv_blob *b = NULL;
	T_INT(0, sv_zip_extract(&z.e[N - 1], mem_rd, &s, mem.len, 1, &b, &err));
	T_OK(b && b->len == 1 && b->data[0] == N - 1);
	sv_blob_unref(b);
	uint64_t last = z.e[N - 1].cd_off;
	sv_zip_fini(&z);

	/* The directory says it is 100 bytes shorter: its last record's
	 * name (50,000 bytes) runs past its end. */
	uint8_t *end = mem.p + mem.len - 22;
	uint32_t size = get32(end + 12);
	end[12] = (uint8_t)(size - 100);
	end[13] = (uint8_t)((size - 100) >> 8);
	end[14] = (uint8_t)((size - 100) >> 16);
	end[15] = (uint8_t)((size - 100) >> 24);
	T_INT(-EBADMSG, sv_zip_open(&z, mem_rd, &s, mem.len, 100, &err));
	T_STR(fmt("zip: byte %llu: central directory record 62: runs past the end of the "
		  "directory", (unsigned long long)last), err.msg);
	sv_zip_fini(&z);
	sv_buf_fini(&mem);
}

/* Reads as mem_rd does, noting the largest read and whether one went
 * straight into the blob being made. */
struct watched {
	struct src s;
	size_t largest;
	const uint8_t *into;   /* where the read of a whole stored member went */
	size_t whole;
};

static int watched_rd(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	struct watched *w = arg;
	if (n > w->largest)
		w->largest = n;
	if (n == w->whole)
		w->into = buf;
	return mem_rd(&w->s, off, buf, n, err);
}

/* A large member is never held twice: a stored one is read straight into
 * its blob, a deflated one inflated from a window of its bytes. */
static void test_large_once(void)
{
	size_t n = 3u << 20;
	uint8_t *data = malloc(n);
	if (!data)
		die("malloc");
	uint64_t x = 88172645463325252ull; /* xorshift: bytes that do not compress */
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		data[i] = (uint8_t)x;
	}
	struct sv_buf mem;
	sv_buf_init(&mem);
	struct sv_zip_writer w;
	struct sv_err err = {0};
	sv_zip_writer_init(&w, -1, &mem);
	T_INT(0, sv_zip_add(&w, "stored.bin", data, n, true, &err));
	T_INT(0, sv_zip_add(&w, "deflated.bin", data, n, false, &err));
	T_INT(0, sv_zip_finish(&w, NULL, 0, &err));
	sv_zip_writer_fini(&w);
	struct watched wt = {{mem.p, mem.len}, 0, NULL, n};
	struct sv_zip z;
	T_INT(0, sv_zip_open(&z, watched_rd, &wt, mem.len, 10, &err));
	for (size_t i = 0; i < z.n; i++) {
		const struct sv_zip_entry *e = &z.e[i];
		T_OK(e->csize > (1u << 20));
		wt.largest = 0;
		wt.into = NULL;
		struct sv_blob *b = NULL;
		T_INT(0, sv_zip_extract(e, watched_rd, &wt, mem.len, UINT64_MAX, &b, &err));
		T_OK(b && b->len == n && !memcmp(b->data, data, n));
		if (!strcmp(e->name, "stored.bin"))
			T_OK(b && wt.into == b->data);
		else
			T_OK(wt.largest <= (1u << 20));
		sv_blob_unref(b);
	}
	sv_zip_fini(&z);
	sv_buf_fini(&mem);
	free(data);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/test_zip.XXXXXX");
	if (!mkdtemp(tmpdir))
		die("mkdtemp");
	pattern(big, sizeof big, 3);
	for (size_t i = 0; i < sizeof text; i++)
		text[i] = (uint8_t)"the quick brown fox jumps over the lazy dog\n"[i % 44];
	have_py = system("python3 -c 'import zipfile' >/dev/null 2>&1") == 0;
	if (have_py) {
		struct sv_buf b = { (uint8_t *)pyscript, sizeof pyscript - 1, 0 };
		write_file(tmp("zipcheck.py"), &b);
	} else {
		printf("note: python3 not found: the checks with Python's zipfile are skipped\n");
	}

	struct sv_buf z64;
	test_roundtrip();
	test_large_once();
	test_raw();
	test_members();
	test_members_order();
	test_members_junk();
	test_members_overlap();
	test_members_bad();
	test_take();
	test_many(&z64);
	test_directory_window();
	test_z64_extra();
	test_python_writes();
	test_bad(&z64);
	test_writer_limits();
	test_threads();
	sv_buf_fini(&z64);

	static const char *const files[] = { "zipcheck.py", "plain.zip", "desc.zip", "src.zip",
					     "raw0.zip", "raw3.zip", "65534.zip", "70000.zip",
					     "py.zip", "members-src.zip", "members.zip",
					     "members3.zip", "hand.zip" };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		unlink(tmp(files[i]));
	if (rmdir(tmpdir))
		perror(tmpdir);
	return t_done();
}
