/*
 * test_datafile.c - the datafile format (core/fmt/teeworlds/datafile.c) through the
 * container interface, without FUSE.
 *
 * Datafiles are built in memory with the project's own writer
 * (sv_df_write into a memfd) and opened with sv_container_open_mem; the
 * edit tests use a real file in a fresh temporary directory.  Checked: the
 * node table (paths, listing order and names, sizes before any read, node
 * flags), reads at odd offsets and sizes, versions 3 and 4, the "ATAD"
 * magic, the short ("crude") size header, duplicate UUID index items,
 * empty data, extended types with and without a UUID, name sanitising,
 * the decode limit, and write-back: edits, refused edits that leave the
 * file byte-identical, removal, creation, rename of a temporary file onto
 * an entry, and a container replaced behind the handle's back.
 *
 * Payloads are built with sv_put_u32le, so the expected bytes do not
 * depend on the host's byte order.
 */
#include "container.h"
#include "format.h"
#include "fmt/teeworlds/datafile.h"
#include "rd.h"
#include "changes.h"
#include "t.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the fixture ------------------------------------------------------- */

#define BIG 70000

static uint8_t p_version[4], p_info[20], p_layer0[60], p_layer1[12], p_env[32];
static uint8_t p_uuid_x[16], p_uuid_am[16], p_ext[16], p_ext2[8], p_ext3[4], p_t200[12];
static uint8_t d_big[BIG];
static const char d_hello[] = "hello, datafile\n";

#define UUID_X "01234567-89ab-cdef-0011-223344556677"
#define AM_DIR "65534-mapitemtype-automapper-config@ddnet.tw"
#define X_DIR "32769-" UUID_X

static void put_ints(uint8_t *p, const uint32_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sv_put_u32le(p + 4 * i, v[i]);
}

/* A UUID index payload: each int's big-endian bytes are 4 UUID bytes. */
static void put_uuid(uint8_t *p, const uint8_t u[16])
{
	for (int k = 0; k < 16; k += 4)
		sv_put_u32le(p + k, (uint32_t)u[k] << 24 | (uint32_t)u[k + 1] << 16 |
				    (uint32_t)u[k + 2] << 8 | u[k + 3]);
}

static void fixture_init(void)
{
	put_ints(p_version, (const uint32_t[]){1}, 1);
	put_ints(p_info, (const uint32_t[]){1, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX}, 5);
	for (uint32_t i = 0; i < 15; i++)
		sv_put_u32le(p_layer0 + 4 * i, i * 0x01010101u + 3);
	put_ints(p_layer1, (const uint32_t[]){3, 2, 0x80000000u}, 3);
	for (uint32_t i = 0; i < 8; i++)
		sv_put_u32le(p_env + 4 * i, 0xdead0000u + i);
	static const uint8_t ux[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
				       0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
	static const uint8_t am[16] = {0x3e, 0x1b, 0x27, 0x16, 0x17, 0x8c, 0x39, 0x78,
				       0x9b, 0xd9, 0xb1, 0x1a, 0xe0, 0x41, 0x0d, 0xd8};
	put_uuid(p_uuid_x, ux);
	put_uuid(p_uuid_am, am);
	put_ints(p_ext, (const uint32_t[]){1, 0, 0, 0}, 4);
	put_ints(p_ext2, (const uint32_t[]){5, 6}, 2);
	put_ints(p_ext3, (const uint32_t[]){9}, 1);
	put_ints(p_t200, (const uint32_t[]){200, 201, 202}, 3);
	uint32_t s = 1;
	for (size_t i = 0; i < BIG; i++) {
		s = s * 1103515245u + 12345u;
		d_big[i] = (uint8_t)(i % 97 < 60 ? (s >> 24) & 7 : (s >> 16));
	}
}

/* Deliberately not sorted by type: the writer groups them. */
static const struct sv_df_witem items[] = {
	{5, 0, p_layer0, sizeof p_layer0},
	{0, 0, p_version, sizeof p_version},
	{0xFFFF, 0x8001, p_uuid_x, sizeof p_uuid_x},
	{1, 0, p_info, sizeof p_info},
	{5, 1, p_layer1, sizeof p_layer1},
	{0xFFFE, 0, p_ext, sizeof p_ext},
	{0xFFFF, 0xFFFE, p_uuid_am, sizeof p_uuid_am},
	{0x8001, 3, p_ext2, sizeof p_ext2},
	{5, 7, NULL, 0},
	{0xFFFF, 0xFFFE, p_uuid_am, sizeof p_uuid_am}, /* duplicate, as in DDNet maps */
	{0x8002, 0, p_ext3, sizeof p_ext3},            /* extended, no index item */
	{200, 4, p_t200, sizeof p_t200},
	{3, 0, p_env, sizeof p_env},
};
#define NITEMS (sizeof items / sizeof *items)

static const struct sv_df_wdata datas[] = {
	{.raw = (const uint8_t *)d_hello, .raw_len = sizeof d_hello - 1},
	{.raw = NULL, .raw_len = 0},
	{.raw = d_big, .raw_len = BIG},
	{.raw = (const uint8_t *)"abc", .raw_len = 3},
	{.raw = d_big + 5, .raw_len = 4},
};
#define NDATA (sizeof datas / sizeof *datas)

/* Every file of the tree and the bytes it must hold. */
struct expect {
	const char *path;
	const uint8_t *p;
	size_t len;
};

static const struct expect files[] = {
	{"items/0-version/00000.bin", p_version, sizeof p_version},
	{"items/1-info/00000.bin", p_info, sizeof p_info},
	{"items/3-envelope/00000.bin", p_env, sizeof p_env},
	{"items/5-layer/00000.bin", p_layer0, sizeof p_layer0},
	{"items/5-layer/00001.bin", p_layer1, sizeof p_layer1},
	{"items/5-layer/00007.bin", NULL, 0},
	{"items/200/00004.bin", p_t200, sizeof p_t200},
	{"items/" X_DIR "/00003.bin", p_ext2, sizeof p_ext2},
	{"items/32770/00000.bin", p_ext3, sizeof p_ext3},
	{"items/" AM_DIR "/00000.bin", p_ext, sizeof p_ext},
	{"items/65535-uuid-index/32769.bin", p_uuid_x, sizeof p_uuid_x},
	{"items/65535-uuid-index/65534.bin", p_uuid_am, sizeof p_uuid_am},
	{"items/65535-uuid-index/65534~2.bin", p_uuid_am, sizeof p_uuid_am},
	{"data/00000.bin", (const uint8_t *)d_hello, sizeof d_hello - 1},
	{"data/00001.bin", NULL, 0},
	{"data/00002.bin", d_big, BIG},
	{"data/00003.bin", (const uint8_t *)"abc", 3},
	{"data/00004.bin", d_big + 5, 4},
};
#define NFILES (sizeof files / sizeof *files)

static struct sv_df_spec spec(int version, const char *magic, bool crude)
{
	struct sv_df_spec s = {
		.version = version, .crude_size = crude,
		.items = items, .nitems = NITEMS,
		.data = datas, .ndata = NDATA,
		.level = -1,
	};
	memcpy(s.magic, magic, 4);
	return s;
}

/* ---- helpers ----------------------------------------------------------- */

static void die(const char *what)
{
	fprintf(stderr, "test_datafile: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Reads all of fd from offset 0. */
static struct sv_buf slurp_fd(int fd)
{
	struct sv_buf b;
	sv_buf_init(&b);
	uint8_t tmp[65536];
	off_t off = 0;
	for (;;) {
		ssize_t k = pread(fd, tmp, sizeof tmp, off);
		if (k < 0)
			die("read");
		if (k == 0)
			break;
		if (sv_buf_add(&b, tmp, (size_t)k))
			die("out of memory");
		off += k;
	}
	return b;
}

static struct sv_buf slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	struct sv_buf b = slurp_fd(fd);
	close(fd);
	return b;
}

/* A datafile as bytes, through the project's writer. */
static struct sv_buf build(const struct sv_df_spec *s)
{
	int fd = memfd_create("df", 0);
	if (fd < 0)
		die("memfd_create");
	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_df_write(fd, s, &err);
	if (rc) {
		fprintf(stderr, "sv_df_write: %s\n", err.msg);
		exit(1);
	}
	struct sv_buf b = slurp_fd(fd);
	close(fd);
	return b;
}

static struct sv_container *open_file(const char *path)
{
	struct sv_opts o;
	sv_opts_init(&o);
	struct sv_container *c = open_file_opts(path, &o);
	T_OK(!sv_container_read_only(c));
	return c;
}

struct listing {
	char names[1024];
	struct sv_stat st[64];
	char name[64][128];
	int n;
};

static int collect(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct listing *l = arg;
	if (l->n)
		strncat(l->names, ",", sizeof l->names - strlen(l->names) - 1);
	strncat(l->names, name, sizeof l->names - strlen(l->names) - 1);
	if (l->n < 64) {
		l->st[l->n] = *st;
		snprintf(l->name[l->n], sizeof l->name[0], "%s", name);
	}
	l->n++;
	(void)next;
	return 0;
}

/* The names in dir, comma-separated, in listing order. */
static const char *ls(struct sv_container *c, const char *dir, struct listing *l)
{
	memset(l, 0, sizeof *l);
	list_dir(c, dir, collect, l);
	return l->names;
}

static json_int_t jint(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* True if the JSON array o[key] holds the string s. */
static bool jhas(json_t *o, const char *key, const char *s)
{
	json_t *a = json_object_get(o, key), *v;
	size_t i;
	json_array_foreach(a, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return true;
	return false;
}

/* The stored (as in the file) bytes of data item i of a version 4 or 3
 * datafile, found with an independent reading of the layout. */
static void stored_data(const struct sv_buf *f, int i, const uint8_t **p, size_t *n)
{
	struct sv_rd r;
	sv_rd_init(&r, f->p, f->len);
	sv_rd_seek(&r, 4);
	int32_t ver = sv_rd_i32le(&r);
	sv_rd_seek(&r, 16);
	int32_t nt = sv_rd_i32le(&r), ni = sv_rd_i32le(&r), nd = sv_rd_i32le(&r);
	int32_t isz = sv_rd_i32le(&r), dsz = sv_rd_i32le(&r);
	size_t doffs = 36 + 12 * (size_t)nt + 4 * (size_t)ni;
	size_t base = doffs + 4 * (size_t)nd * (ver == 4 ? 2 : 1) + (size_t)isz;
	sv_rd_seek(&r, doffs + 4 * (size_t)i);
	int32_t off = sv_rd_i32le(&r);
	int32_t next = i + 1 < nd ? sv_rd_i32le(&r) : dsz;
	T_OK(sv_rd_ok(&r));
	T_OK(base + (size_t)next <= f->len);
	*p = f->p + base + off;
	*n = (size_t)(next - off);
}

/* ---- reading ----------------------------------------------------------- */

/* Every file of the fixture, read whole and at odd offsets and sizes. */
static void check_reads(struct sv_container *c)
{
	for (size_t i = 0; i < NFILES; i++) {
		const struct expect *e = &files[i];
		uint32_t n = node_of(c, e->path);
		if (n == SV_NONE)
			continue;
		same(c, e->path, e->p, e->len);
		static uint8_t buf[BIG + 8192];
		const size_t offs[][2] = {
			{0, 1}, {1, 2}, {3, 5}, {e->len / 2, 7}, {e->len ? e->len - 1 : 0, 3},
			{e->len, 4}, {e->len + 5, 4}, {0, e->len + 10}, {4093, 4097},
		};
		for (size_t k = 0; k < sizeof offs / sizeof *offs; k++) {
			size_t off = offs[k][0], size = offs[k][1], got = 12345;
			struct sv_err err;
			T_INT(0, sv_read(c, n, off, buf, size, &got, &err));
			size_t want = off < e->len ? e->len - off : 0;
			if (want > size)
				want = size;
			T_UINT(want, got);
			if (got == want && want)
				T_MEM(e->p + off, buf, want);
		}
		/* Whole file in odd chunks. */
		static const size_t chunks[] = {7, 4093};
		for (size_t k = 0; k < 2; k++) {
			size_t pos = 0, got;
			struct sv_err err;
			do {
				got = 0;
				if (sv_read(c, n, pos, buf + pos, chunks[k], &got, &err))
					break;
				pos += got;
			} while (got && pos < sizeof buf - chunks[k]);
			T_UINT(e->len, pos);
			if (pos == e->len)
				T_MEM(e->p, buf, e->len);
		}
	}
}

static void tree(void)
{
	struct sv_df_spec s = spec(4, "DATA", false);
	struct sv_buf f = build(&s);
	struct sv_container *c = open_mem(&f);
	struct listing l;
	T_STR("datafile", sv_container_format(c)->name);
	T_OK(sv_container_read_only(c));
	T_STR(".savefs,items,data,map,header.json", ls(c, "", &l));
	T_STR("info,log", ls(c, ".savefs", &l));
	T_STR("0-version,1-info,3-envelope,5-layer,200," X_DIR ",32770," AM_DIR
	      ",65535-uuid-index", ls(c, "items", &l));
	T_STR("00000.bin,00001.bin,00007.bin", ls(c, "items/5-layer", &l));
	T_STR("32769.bin,65534.bin,65534~2.bin", ls(c, "items/65535-uuid-index", &l));
	T_STR("00000.bin,00001.bin,00002.bin,00003.bin,00004.bin", ls(c, "data", &l));

	/* Sizes are exact in stat before anything is read or decoded. */
	for (size_t i = 0; i < NFILES; i++) {
		struct sv_stat st;
		uint32_t n = node_of(c, files[i].path);
		T_INT(0, sv_stat(c, n, &st));
		if (st.size != files[i].len)
			fprintf(stderr, "  (size of %s)\n", files[i].path);
		T_UINT(files[i].len, st.size);
		T_OK(!st.dir);
		T_UINT(S_IFREG | 0444, st.mode); /* a memory container is read-only */
		T_OK(!st.writable);
		T_OK(!st.volatile_);
	}
	/* ... and readdir reports the same sizes. */
	ls(c, "data", &l);
	T_UINT(BIG, l.st[2].size);
	T_UINT(0, l.st[1].size);
	struct sv_cache_stats cs;
	sv_container_cache_stats(c, &cs);
	T_UINT(0, cs.entries);
	T_UINT(0, cs.misses);

	/* Node flags. */
	struct sv_node *hn = sv_node(c, node_of(c, "header.json"));
	T_OK(hn->flags & SV_N_RO);
	T_OK(!(hn->flags & SV_N_DIR));
	T_OK(sv_node(c, node_of(c, "items"))->flags & SV_N_DIR);
	T_OK(sv_node(c, node_of(c, "items/5-layer"))->flags & SV_N_DIR);
	T_OK(sv_node(c, node_of(c, ".savefs"))->flags & SV_N_DIR);
	T_OK(sv_node(c, node_of(c, ".savefs/info"))->flags & SV_S_META);
	T_OK(sv_node(c, node_of(c, ".savefs/log"))->flags & SV_S_META);
	for (size_t i = 0; i < NFILES; i++) {
		uint32_t fl = sv_node(c, node_of(c, files[i].path))->flags;
		T_UINT(0, fl & (SV_N_DIR | SV_N_RO | SV_N_BAD | SV_S_META | SV_S_TEMP |
				SV_S_NEW | SV_S_GONE | SV_S_DIRTY));
	}
	struct sv_stat st;
	T_INT(0, sv_stat(c, node_of(c, "items"), &st));
	T_OK(st.dir);
	T_UINT(S_IFDIR | 0555, st.mode);
	T_UINT(2 + 9, st.nlink);
	T_INT(0, sv_stat(c, node_of(c, ".savefs/info"), &st));
	T_OK(st.volatile_);
	T_OK(st.size > 0);
	T_INT(0, sv_stat(c, node_of(c, "header.json"), &st));
	struct sv_blob *hb = content(c, "header.json");
	T_UINT(st.size, hb ? hb->len : 0);
	sv_blob_unref(hb);

	/* Lookups. */
	uint32_t n, n2;
	T_INT(0, sv_resolve(c, "/data//00002.bin", &n));
	T_INT(0, sv_resolve(c, "data/00002.bin", &n2));
	T_UINT(n, n2);
	T_INT(0, sv_resolve(c, "items/5-layer/../5-layer/./00007.bin", &n));
	T_UINT(node_of(c, "items/5-layer/00007.bin"), n);
	T_INT(0, sv_resolve(c, "", &n));
	T_UINT(SV_ROOT, n);
	T_INT(0, sv_resolve(c, "/", &n));
	T_UINT(SV_ROOT, n);
	T_INT(-ENOENT, sv_resolve(c, "data/00005.bin", &n));
	T_INT(-ENOENT, sv_resolve(c, "items/5", &n));
	T_INT(-ENOTDIR, sv_resolve(c, "header.json/x", &n));
	char path[256];
	T_INT(0, sv_path(c, node_of(c, "items/65535-uuid-index/65534~2.bin"), path, sizeof path));
	T_STR("items/65535-uuid-index/65534~2.bin", path);
	T_INT(0, sv_path(c, SV_ROOT, path, sizeof path));
	T_STR("", path);
	T_INT(-ENAMETOOLONG, sv_path(c, node_of(c, "data/00002.bin"), path, 8));
	/* readdir from a position. */
	memset(&l, 0, sizeof l);
	T_INT(0, sv_readdir(c, node_of(c, "data"), 3, collect, &l));
	T_STR("00003.bin,00004.bin", l.names);
	T_INT(-ENOTDIR, sv_readdir(c, node_of(c, "header.json"), 0, collect, &l));

	check_reads(c);
	/* Directories are not files; nothing can be written in memory. */
	struct sv_blob *b = NULL;
	struct sv_err err;
	T_INT(-EISDIR, sv_content(c, node_of(c, "items"), &b, &err));
	T_INT(-EROFS, sv_write(c, node_of(c, "data/00000.bin"), 0, "x", 1, &err));
	T_INT(-EROFS, sv_truncate(c, node_of(c, "items/1-info/00000.bin"), 0, &err));
	uint32_t nn;
	T_INT(-EROFS, sv_create(c, node_of(c, "data"), "00005.bin", 0644, &nn, &err));

	/* header.json and /.savefs/info describe the file. */
	json_t *h = json_of(c, "header.json");
	T_STR("DATA", json_string_value(json_object_get(h, "magic")));
	T_INT(4, jint(h, "version"));
	T_INT(NITEMS, jint(h, "num_items"));
	T_INT(NDATA, jint(h, "num_data"));
	T_INT(9, jint(h, "num_item_types"));
	T_INT((json_int_t)f.len - 16, jint(h, "size"));
	T_UINT(0, json_array_size(json_object_get(h, "quirks")));
	json_decref(h);
	json_t *info = json_of(c, ".savefs/info");
	T_STR("datafile", json_string_value(json_object_get(info, "format")));
	T_INT(4, jint(info, "format_version"));
	T_INT((json_int_t)f.len, jint(info, "container_size"));
	T_INT(NITEMS, jint(json_object_get(info, "counts"), "items"));
	T_INT(NDATA, jint(json_object_get(info, "counts"), "data"));
	T_INT(0, jint(json_object_get(info, "counts"), "bad_data"));
	json_decref(info);
	/* The duplicate index item is shown under a suffixed name. */
	T_OK(log_has(c, "duplicate name \"65534.bin\": shown as \"65534~2.bin\""));
	sv_container_free(c);
	sv_buf_fini(&f);
}

static void versions_and_quirks(void)
{
	struct listing l;
	/* Version 3: data stored raw, sizes from the stored lengths. */
	struct sv_df_spec s = spec(3, "DATA", false);
	struct sv_buf f = build(&s);
	T_OK(memmem(f.p, f.len, d_hello, sizeof d_hello - 1) != NULL);
	struct sv_container *c = open_mem(&f);
	json_t *h = json_of(c, "header.json");
	T_INT(3, jint(h, "version"));
	json_decref(h);
	json_t *info = json_of(c, ".savefs/info");
	T_INT(3, jint(info, "format_version"));
	/* The container is sound; the map view finds the envelope item short. */
	T_UINT(1, json_array_size(json_object_get(info, "warnings")));
	T_OK(jhas(info, "warnings", "map: envelope 0: the item has 8 ints, fewer than 12"));
	json_decref(info);
	T_STR("00000.bin,00001.bin,00002.bin,00003.bin,00004.bin", ls(c, "data", &l));
	check_reads(c);
	sv_container_free(c);
	sv_buf_fini(&f);

	/* "ATAD": integers still little-endian. */
	s = spec(4, "ATAD", false);
	f = build(&s);
	T_MEM("ATAD", f.p, 4);
	c = open_mem(&f);
	h = json_of(c, "header.json");
	T_STR("ATAD", json_string_value(json_object_get(h, "magic")));
	T_OK(jhas(h, "quirks", "atad-magic: written by a big-endian host"));
	json_decref(h);
	check_reads(c);
	sv_container_free(c);
	sv_buf_fini(&f);

	/* Version 3 under "ATAD". */
	s = spec(3, "ATAD", false);
	f = build(&s);
	c = open_mem(&f);
	check_reads(c);
	sv_container_free(c);
	sv_buf_fini(&f);

	/* The old writers' short size header: accepted, with a warning. */
	s = spec(4, "DATA", true);
	f = build(&s);
	struct sv_rd r;
	sv_rd_init(&r, f.p, f.len);
	sv_rd_seek(&r, 8);
	T_INT((int64_t)f.len - 16 - 4 * (int64_t)NDATA, sv_rd_i32le(&r));
	c = open_mem(&f);
	info = json_of(c, ".savefs/info");
	T_OK(jhas(info, "warnings",
		  "datafile: size and swaplen omit the data size table (20 bytes short, "
		  "as old writers did)"));
	json_decref(info);
	h = json_of(c, "header.json");
	T_OK(jhas(h, "quirks", "crude-size: size and swaplen omit the data size table"));
	json_decref(h);
	check_reads(c);
	sv_container_free(c);
	sv_buf_fini(&f);

	/* No items and no data at all. */
	struct sv_df_spec e = {.magic = "DATA", .version = 4, .level = -1};
	f = build(&e);
	T_UINT(36, f.len);
	c = open_mem(&f);
	T_STR("", ls(c, "items", &l));
	T_STR("", ls(c, "data", &l));
	sv_container_free(c);
	sv_buf_fini(&f);

	/* A data section of no bytes holding one empty data item. */
	static const struct sv_df_wdata empties[] = {{.raw = NULL, .raw_len = 0}};
	struct sv_df_spec z = {.magic = "DATA", .version = 3, .data = empties, .ndata = 1,
			       .level = -1};
	f = build(&z);
	c = open_mem(&f);
	same(c, "data/00000.bin", "", 0);
	sv_container_free(c);
	sv_buf_fini(&f);
}

static void limits(void)
{
	struct sv_df_spec s = spec(4, "DATA", false);
	struct sv_buf f = build(&s);
	struct sv_opts o;
	sv_opts_init(&o);
	o.max_decode = 100;
	struct sv_container *c = open_mem_opts(&f, &o);
	uint32_t n = node_of(c, "data/00002.bin");
	T_OK(sv_node(c, n)->flags & SV_N_BAD);
	struct sv_stat st;
	T_INT(0, sv_stat(c, n, &st));
	T_UINT(BIG, st.size);
	struct sv_blob *b = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(-EIO, sv_content(c, n, &b, &err));
	T_OK(b == NULL);
	T_STR("datafile: data item 2: size 70000 is over the decode limit of 100 bytes", err.msg);
	T_OK(log_has(c, "read data/00002.bin: datafile: data item 2: size 70000 is over the "
			"decode limit of 100 bytes"));
	size_t got = 99;
	uint8_t buf[16];
	T_INT(-EIO, sv_read(c, n, 0, buf, sizeof buf, &got, &err));
	T_UINT(0, got);
	/* The others still read. */
	same(c, "data/00000.bin", d_hello, sizeof d_hello - 1);
	json_t *info = json_of(c, ".savefs/info");
	T_INT(1, jint(json_object_get(info, "counts"), "bad_data"));
	json_decref(info);
	sv_container_free(c);

	/* A cache smaller than a file: reads still work, nothing over the cap. */
	sv_opts_init(&o);
	o.cache_cap = 1000;
	c = open_mem_opts(&f, &o);
	check_reads(c);
	struct sv_cache_stats cs;
	sv_container_cache_stats(c, &cs);
	T_OK(cs.bytes <= 1000);
	T_OK(cs.hits > 0);
	sv_container_free(c);
	sv_buf_fini(&f);
}

/* ---- the node table ---------------------------------------------------- */

static void node_names(void)
{
	struct sv_df_spec s = spec(4, "DATA", false);
	struct sv_buf f = build(&s);
	struct sv_container *c = open_mem(&f);
	uint32_t before = sv_node_count(c);
	static const struct {
		const char *in, *shown;
	} cases[] = {
		{"", "_"},
		{".", "._"},
		{"..", ".._"},
		{"a/b", "a_b"},
		{"/", "_~2"},        /* "_" is taken by now */
		{"dup", "dup"},
		{"dup", "dup~2"},
		{"dup", "dup~3"},
		{"x.bin", "x.bin"},
		{"x.bin", "x~2.bin"}, /* the extension stays last */
		{".hidden", ".hidden"},
		{".hidden", ".hidden~2"},
		{"header.json", "header~2.json"},
		{"a_b", "a_b~2"},
	};
	uint32_t nodes[sizeof cases / sizeof *cases];
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		nodes[i] = sv_node_add(c, SV_ROOT, cases[i].in, 0, i, 1000 + i);
		T_OK(nodes[i] != SV_NONE);
		if (nodes[i] == SV_NONE)
			continue;
		struct sv_node *n = sv_node(c, nodes[i]);
		T_STR(cases[i].shown, n->name);
		T_UINT(SV_ROOT, n->parent);
		T_UINT(i, n->size);
		uint32_t found;
		T_INT(0, sv_lookup(c, SV_ROOT, cases[i].shown, &found));
		T_UINT(nodes[i], found);
	}
	T_UINT(before + sizeof cases / sizeof *cases, sv_node_count(c));
	struct listing l;
	T_STR(".savefs,items,data,map,header.json,_,._,.._,a_b,_~2,dup,dup~2,dup~3,x.bin,"
	      "x~2.bin,.hidden,.hidden~2,header~2.json,a_b~2", ls(c, "", &l));
	/* A long name is cut to a valid length. */
	char longname[400];
	memset(longname, 'n', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	uint32_t ln = sv_node_add(c, SV_ROOT, longname, 0, 0, 0);
	T_OK(ln != SV_NONE);
	if (ln != SV_NONE) {
		T_OK(strlen(sv_node(c, ln)->name) <= 255);
		T_OK(strlen(sv_node(c, ln)->name) > 0);
	}
	/* Only a directory can be a parent. */
	T_UINT(SV_NONE, sv_node_add(c, node_of(c, "header.json"), "x", 0, 0, 0));
	T_UINT(SV_NONE, sv_node_add(c, 999999, "x", 0, 0, 0));
	/* A subdirectory, and a file in it. */
	uint32_t d = sv_node_add(c, SV_ROOT, "sub", SV_N_DIR, 0, 0);
	T_OK(d != SV_NONE);
	T_OK(sv_node_add(c, d, "..", 0, 0, 0) != SV_NONE);
	T_STR(".._", ls(c, "sub", &l));
	/* The changes are logged. */
	T_OK(log_has(c, "name \"a/b\" is not a valid file name: shown as \"a_b\""));
	T_OK(log_has(c, "name \"\" is not a valid file name: shown as \"_\""));
	T_OK(log_has(c, "duplicate name \"dup\": shown as \"dup~2\""));
	sv_container_free(c);
	sv_buf_fini(&f);
}

/* ---- write-back -------------------------------------------------------- */

static char tmpdir[64];
static char mappath[128];

/* Writes the fixture (version, magic) to a fresh mappath, mode 0640. */
static struct sv_buf fresh(int version, const char *magic)
{
	struct sv_df_spec s = spec(version, magic, false);
	struct sv_buf f = build(&s);
	unlink(mappath);
	write_file(mappath, &f);
	chmod(mappath, 0640);
	return f;
}

/* Nothing but the container is left in the directory. */
static void dir_clean(void)
{
	only_left(tmpdir, "m.map");
}

/* Every fixture file except those named in skip (a NULL-terminated list)
 * still holds its bytes. */
static void others_intact(struct sv_container *c, const char *const *skip)
{
	for (size_t i = 0; i < NFILES; i++) {
		bool skipped = false;
		for (size_t k = 0; skip && skip[k]; k++)
			skipped |= !strcmp(skip[k], files[i].path);
		if (!skipped)
			same(c, files[i].path, files[i].p, files[i].len);
	}
}

/* Data item i is stored with the same bytes in both files. */
static void stored_same(const struct sv_buf *a, const struct sv_buf *b, int i)
{
	const uint8_t *p, *q;
	size_t n, m;
	stored_data(a, i, &p, &n);
	stored_data(b, i, &q, &m);
	T_UINT(n, m);
	if (n == m)
		T_MEM(p, q, n);
}

/* Frees c, then checks that every data item of the file on disk is still
 * stored byte for byte as in orig (copied, not recompressed). */
static void end_and_check_stored(struct sv_container *c, struct sv_buf *orig)
{
	sv_container_free(c);
	struct sv_buf now = slurp(mappath);
	for (int i = 0; i < (int)NDATA; i++)
		stored_same(orig, &now, i);
	sv_buf_fini(&now);
	sv_buf_fini(orig);
	dir_clean();
}

static void edit_and_commit(void)
{
	struct sv_buf orig = fresh(4, "DATA");
	/* Modes follow the container's: 0640 gives 0640 files, 0440 views,
	 * 0750 directories, owned by the container's owner. */
	T_INT(0, chmod(mappath, 0640));
	struct sv_container *c = open_file(mappath);
	struct sv_err err;
	uint32_t n = node_of(c, "items/5-layer/00001.bin");
	uint32_t dup = node_of(c, "items/65535-uuid-index/65534~2.bin");
	struct sv_stat st;
	T_INT(0, sv_stat(c, n, &st));
	T_OK(st.writable);
	T_UINT(S_IFREG | 0640, st.mode);
	T_UINT(getuid(), st.uid);
	T_INT(0, sv_stat(c, node_of(c, "header.json"), &st));
	T_UINT(S_IFREG | 0440, st.mode);
	T_INT(0, sv_stat(c, SV_ROOT, &st));
	T_UINT(S_IFDIR | 0750, st.mode);

	/* Nothing pending: a commit does nothing. */
	struct stat before, after;
	stat(mappath, &before);
	T_INT(0, sv_commit(c, NULL, NULL, &err));
	stat(mappath, &after);
	T_UINT(before.st_ino, after.st_ino);

	/* Overwrite the second int of an item. */
	uint8_t edited[sizeof p_layer1];
	memcpy(edited, p_layer1, sizeof edited);
	sv_put_u32le(edited + 4, 0x11223344u);
	T_INT(0, sv_write(c, n, 4, edited + 4, 4, &err));
	T_OK(sv_node(c, n)->flags & SV_S_DIRTY);
	same(c, "items/5-layer/00001.bin", edited, sizeof edited);
	/* A data item, emptied and rewritten. */
	uint32_t dn = node_of(c, "data/00003.bin");
	T_INT(0, sv_truncate(c, dn, 0, &err));
	T_INT(0, sv_write(c, dn, 0, "xyz123", 6, &err));
	T_INT(0, sv_stat(c, dn, &st));
	T_UINT(6, st.size);
	struct changes ch = {0};
	sv_err_clear(&err);
	int rc = sv_commit(c, on_change, &ch, &err);
	if (rc)
		fprintf(stderr, "  (commit: %s)\n", err.msg);
	T_INT(0, rc);
	T_OK(changed(&ch, n));
	T_OK(changed(&ch, dn));
	/* Names and node numbers survive the commit (the suffixed duplicate
	 * too); the edit is now the stored content. */
	struct listing l;
	T_STR("32769.bin,65534.bin,65534~2.bin", ls(c, "items/65535-uuid-index", &l));
	uint32_t dup2 = SV_NONE;
	T_INT(0, sv_resolve(c, "items/65535-uuid-index/65534~2.bin", &dup2));
	T_UINT(dup, dup2);
	T_UINT(n, node_of(c, "items/5-layer/00001.bin"));
	T_UINT(dn, node_of(c, "data/00003.bin"));
	T_OK(!(sv_node(c, n)->flags & SV_S_DIRTY));
	same(c, "items/5-layer/00001.bin", edited, sizeof edited);
	same(c, "data/00003.bin", "xyz123", 6);
	T_OK(log_has(c, "committed "));
	sv_container_free(c);

	/* What landed on disk, read by a new handle. */
	stat(mappath, &after);
	T_UINT(0640, after.st_mode & 07777);
	T_OK(after.st_ino != before.st_ino); /* replaced, not written in place */
	dir_clean();
	c = open_file(mappath);
	same(c, "items/5-layer/00001.bin", edited, sizeof edited);
	same(c, "data/00003.bin", "xyz123", 6);
	static const char *const skip[] = {"items/5-layer/00001.bin", "data/00003.bin", NULL};
	others_intact(c, skip);
	json_t *h = json_of(c, "header.json");
	T_INT(4, jint(h, "version"));
	T_STR("DATA", json_string_value(json_object_get(h, "magic")));
	json_decref(h);
	sv_container_free(c);
	/* Untouched data is copied as stored, not recompressed. */
	struct sv_buf now = slurp(mappath);
	stored_same(&orig, &now, 0);
	stored_same(&orig, &now, 2);
	stored_same(&orig, &now, 4);
	sv_buf_fini(&now);
	sv_buf_fini(&orig);
}

static void refused_edits(void)
{
	struct sv_buf orig = fresh(4, "DATA");
	struct sv_container *c = open_file(mappath);
	struct sv_err err;
	uint32_t n = node_of(c, "items/5-layer/00001.bin");
	/* 12 bytes + 3: not a list of int32. */
	T_INT(0, sv_write(c, n, 12, "abc", 3, &err));
	sv_err_clear(&err);
	T_INT(-EINVAL, sv_commit(c, NULL, NULL, &err));
	T_INT(-EINVAL, err.code);
	T_STR("datafile: an item is a list of int32: its size must be a multiple of 4 "
	      "bytes, not 15", err.msg);
	struct sv_buf now = slurp(mappath);
	T_UINT(orig.len, now.len);
	if (now.len == orig.len)
		T_MEM(orig.p, now.p, orig.len);
	sv_buf_fini(&now);
	/* The refused edit is dropped: the file reads as stored, and the log
	 * says why. */
	T_OK(!(sv_node(c, n)->flags & SV_S_DIRTY));
	same(c, "items/5-layer/00001.bin", p_layer1, sizeof p_layer1);
	T_OK(log_has(c, "refused items/5-layer/00001.bin: datafile: an item is a list of "
			"int32: its size must be a multiple of 4 bytes, not 15"));
	/* Truncated to a size that is not a multiple of 4. */
	T_INT(0, sv_truncate(c, n, 6, &err));
	T_INT(-EINVAL, sv_flush(c, n, NULL, NULL, &err));
	T_STR("datafile: an item is a list of int32: its size must be a multiple of 4 "
	      "bytes, not 6", err.msg);
	/* A data item cannot be removed. */
	uint32_t data = node_of(c, "data");
	sv_err_clear(&err);
	T_INT(-EPERM, sv_unlink(c, data, "00002.bin", NULL, NULL, &err));
	T_STR("datafile: items refer to data items by index, so one cannot be removed "
	      "(truncate it to 0 bytes instead)", err.msg);
	T_OK(node_of(c, "data/00002.bin") != SV_NONE);
	/* Nor a view. */
	sv_err_clear(&err);
	T_INT(-EPERM, sv_unlink(c, SV_ROOT, "header.json", NULL, NULL, &err));
	/* A view takes a write, held until the close: only its own bytes
	 * are accepted then. */
	T_INT(0, sv_write(c, node_of(c, "header.json"), 0, "{", 1, &err));
	T_INT(0, sv_flush(c, node_of(c, "header.json"), NULL, NULL, &err)); /* the same */
	T_INT(0, sv_truncate(c, node_of(c, "header.json"), 1, &err));
	T_INT(-EPERM, sv_flush(c, node_of(c, "header.json"), NULL, NULL, &err));
	T_STR("this file is a view of the container: it cannot be written, except with the "
	      "very bytes it shows", err.msg);
	T_INT(-EPERM, sv_write(c, node_of(c, ".savefs/info"), 0, "{", 1, &err));
	T_INT(-EISDIR, sv_unlink(c, SV_ROOT, "items", NULL, NULL, &err));
	T_INT(-ENOENT, sv_unlink(c, data, "00099.bin", NULL, NULL, &err));
	/* Container entries are not renamed. */
	T_INT(-EPERM, sv_rename(c, data, "00002.bin", data, "00009.bin", 0, NULL, NULL, &err));
	sv_container_free(c);
	now = slurp(mappath);
	T_UINT(orig.len, now.len);
	if (now.len == orig.len)
		T_MEM(orig.p, now.p, orig.len);
	sv_buf_fini(&now);
	dir_clean();
	sv_buf_fini(&orig);
}

static void unlink_item(void)
{
	struct sv_buf orig = fresh(4, "DATA");
	struct sv_container *c = open_file(mappath);
	struct sv_err err;
	struct listing l;
	uint32_t layers = node_of(c, "items/5-layer");
	uint32_t gone = node_of(c, "items/5-layer/00001.bin");
	struct changes ch = {0};
	sv_err_clear(&err);
	int rc = sv_unlink(c, layers, "00001.bin", on_change, &ch, &err);
	if (rc)
		fprintf(stderr, "  (unlink: %s)\n", err.msg);
	T_INT(0, rc);
	T_OK(changed(&ch, gone));
	uint32_t n;
	T_INT(-ENOENT, sv_resolve(c, "items/5-layer/00001.bin", &n));
	T_STR("00000.bin,00007.bin", ls(c, "items/5-layer", &l));
	/* Removing the last item of a type removes its directory too. */
	rc = sv_unlink(c, node_of(c, "items/200"), "00004.bin", NULL, NULL, &err);
	T_INT(0, rc);
	sv_container_free(c);

	c = open_file(mappath);
	T_STR("00000.bin,00007.bin", ls(c, "items/5-layer", &l));
	T_STR("0-version,1-info,3-envelope,5-layer," X_DIR ",32770," AM_DIR
	      ",65535-uuid-index", ls(c, "items", &l));
	static const char *const skip[] = {"items/5-layer/00001.bin", "items/200/00004.bin",
					   NULL};
	others_intact(c, skip);
	json_t *h = json_of(c, "header.json");
	T_INT(NITEMS - 2, jint(h, "num_items"));
	T_INT(NDATA, jint(h, "num_data"));
	json_decref(h);
	end_and_check_stored(c, &orig);
}

static void create_entries(void)
{
	struct sv_buf orig = fresh(4, "DATA");
	struct sv_container *c = open_file(mappath);
	struct sv_err err;
	struct listing l;
	uint32_t data = node_of(c, "data"), layers = node_of(c, "items/5-layer");
	uint32_t n = SV_NONE, gap = SV_NONE, item = SV_NONE;
	T_INT(-EEXIST, sv_create(c, data, "00001.bin", 0644, &n, &err));
	/* The next index is a new data item; a gap would be a file held in
	 * memory and lost: refused; a scratch name is a temporary file. */
	T_INT(0, sv_create(c, data, "00005.bin", 0644, &n, &err));
	T_OK(sv_node(c, n)->flags & SV_S_NEW);
	T_INT(-EPERM, sv_create(c, data, "00009.bin", 0644, &gap, &err));
	T_INT(0, sv_create(c, data, "00009.bin.tmp", 0644, &gap, &err));
	T_OK(sv_node(c, gap)->flags & SV_S_TEMP);
	T_INT(0, sv_write(c, n, 0, "new data!", 9, &err));
	T_INT(0, sv_write(c, gap, 0, "temporary", 9, &err));
	/* A new item in an existing type. */
	T_INT(0, sv_create(c, layers, "00042.bin", 0644, &item, &err));
	T_OK(sv_node(c, item)->flags & SV_S_NEW);
	T_INT(0, sv_write(c, item, 0, "\1\0\0\0\2\0\0\0", 8, &err));
	sv_err_clear(&err);
	int rc = sv_commit(c, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (commit: %s)\n", err.msg);
	T_INT(0, rc);
	same(c, "data/00005.bin", "new data!", 9);
	same(c, "data/00009.bin.tmp", "temporary", 9);
	T_OK(!(sv_node(c, n)->flags & SV_S_NEW));
	sv_container_free(c);

	c = open_file(mappath);
	T_STR("00000.bin,00001.bin,00002.bin,00003.bin,00004.bin,00005.bin", ls(c, "data", &l));
	T_STR("00000.bin,00001.bin,00007.bin,00042.bin", ls(c, "items/5-layer", &l));
	same(c, "data/00005.bin", "new data!", 9);
	same(c, "items/5-layer/00042.bin", "\1\0\0\0\2\0\0\0", 8);
	others_intact(c, NULL);
	/* 00006 is now the next index. */
	T_INT(0, sv_create(c, node_of(c, "data"), "00006.bin", 0644, &n, &err));
	T_OK(sv_node(c, n)->flags & SV_S_NEW);
	sv_discard(c, n);
	T_INT(-ENOENT, sv_resolve(c, "data/00006.bin", &n));
	end_and_check_stored(c, &orig);
}

static void rename_onto_entry(void)
{
	struct sv_buf orig = fresh(4, "DATA");
	struct sv_container *c = open_file(mappath);
	struct sv_err err;
	struct listing l;
	uint32_t layers = node_of(c, "items/5-layer"), data = node_of(c, "data");
	uint32_t t = SV_NONE;
	/* An editor's way: write a temporary file, rename it over the item. */
	T_INT(0, sv_create(c, layers, ".00000.bin.swp", 0644, &t, &err));
	T_OK(sv_node(c, t)->flags & SV_S_TEMP);
	static const uint8_t repl[16] = {9, 0, 0, 0, 8, 0, 0, 0, 7, 0, 0, 0, 6, 0, 0, 0};
	T_INT(0, sv_write(c, t, 0, repl, sizeof repl, &err));
	T_STR("00000.bin,00001.bin,00007.bin,.00000.bin.swp", ls(c, "items/5-layer", &l));
	sv_err_clear(&err);
	int rc = sv_rename(c, layers, ".00000.bin.swp", layers, "00000.bin", 0, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (rename: %s)\n", err.msg);
	T_INT(0, rc);
	T_STR("00000.bin,00001.bin,00007.bin", ls(c, "items/5-layer", &l));
	same(c, "items/5-layer/00000.bin", repl, sizeof repl);
	/* The same onto a data item: recompressed. */
	T_INT(0, sv_create(c, data, "new.tmp", 0644, &t, &err));
	T_INT(0, sv_write(c, t, 0, d_big + 100, 5000, &err));
	rc = sv_rename(c, data, "new.tmp", data, "00002.bin", 0, NULL, NULL, &err);
	if (rc)
		fprintf(stderr, "  (rename: %s)\n", err.msg);
	T_INT(0, rc);
	T_STR("00000.bin,00001.bin,00002.bin,00003.bin,00004.bin", ls(c, "data", &l));
	/* A temporary file that is not a valid item is refused, and the
	 * container keeps its item. */
	T_INT(0, sv_create(c, layers, "bad.tmp", 0644, &t, &err));
	T_INT(0, sv_write(c, t, 0, "12345", 5, &err));
	struct sv_buf mid = slurp(mappath);
	sv_err_clear(&err);
	T_INT(-EINVAL, sv_rename(c, layers, "bad.tmp", layers, "00001.bin", 0, NULL, NULL, &err));
	T_STR("datafile: an item is a list of int32: its size must be a multiple of 4 "
	      "bytes, not 5", err.msg);
	struct sv_buf now = slurp(mappath);
	T_UINT(mid.len, now.len);
	if (mid.len == now.len)
		T_MEM(mid.p, now.p, mid.len);
	sv_buf_fini(&now);
	sv_buf_fini(&mid);
	same(c, "items/5-layer/00001.bin", p_layer1, sizeof p_layer1);
	/* RENAME_NOREPLACE onto an entry. */
	T_INT(-EEXIST, sv_rename(c, layers, "bad.tmp", layers, "00001.bin", 1, NULL, NULL, &err));
	/* A temporary file renamed to another temporary name stays one. */
	T_INT(0, sv_rename(c, layers, "bad.tmp", layers, "other.tmp", 0, NULL, NULL, &err));
	T_OK(sv_node(c, node_of(c, "items/5-layer/other.tmp"))->flags & SV_S_TEMP);
	T_INT(0, sv_unlink(c, layers, "other.tmp", NULL, NULL, &err));
	sv_container_free(c);

	c = open_file(mappath);
	same(c, "items/5-layer/00000.bin", repl, sizeof repl);
	same(c, "data/00002.bin", d_big + 100, 5000);
	static const char *const skip[] = {"items/5-layer/00000.bin", "data/00002.bin", NULL};
	others_intact(c, skip);
	T_STR("00000.bin,00001.bin,00007.bin", ls(c, "items/5-layer", &l));
	sv_container_free(c);
	now = slurp(mappath);
	stored_same(&orig, &now, 0);
	stored_same(&orig, &now, 3);
	sv_buf_fini(&now);
	sv_buf_fini(&orig);
	dir_clean();
}

static void changed_on_disk(void)
{
	struct sv_buf orig = fresh(4, "DATA");
	struct sv_container *c = open_file(mappath);
	struct sv_err err;
	/* Another program replaces the file (write beside, rename over). */
	struct sv_df_spec s3 = spec(3, "DATA", false);
	struct sv_buf other = build(&s3);
	char side[160];
	snprintf(side, sizeof side, "%s/other", tmpdir);
	write_file(side, &other);
	T_INT(0, rename(side, mappath));
	uint32_t n = node_of(c, "items/5-layer/00001.bin");
	T_INT(0, sv_write(c, n, 0, "\0\0\0\0", 4, &err));
	sv_err_clear(&err);
	T_INT(-EBUSY, sv_commit(c, NULL, NULL, &err));
	char want[400];
	snprintf(want, sizeof want,
		 "%s was replaced by another file since it was read: not overwritten, the "
		 "edit is dropped (remount to see the file as it is now)", sv_container_path(c));
	T_STR(want, err.msg);
	struct sv_buf now = slurp(mappath);
	T_UINT(other.len, now.len);
	if (other.len == now.len)
		T_MEM(other.p, now.p, other.len);
	sv_buf_fini(&now);
	sv_container_free(c);

	/* Rewritten in place (same inode, same size, new mtime). */
	sv_buf_fini(&orig);
	orig = fresh(4, "DATA");
	c = open_file(mappath);
	int fd = open(mappath, O_WRONLY);
	T_INT(1, pwrite(fd, "A", 1, 0));
	orig.p[0] = 'A';
	struct timespec ts[2] = {{0, UTIME_OMIT}, {0, 0}};
	clock_gettime(CLOCK_REALTIME, &ts[1]);
	ts[1].tv_sec += 10;
	futimens(fd, ts);
	close(fd);
	n = node_of(c, "data/00000.bin");
	T_INT(0, sv_write(c, n, 0, "H", 1, &err));
	T_INT(-EBUSY, sv_flush(c, n, NULL, NULL, &err));
	snprintf(want, sizeof want, "%s was changed by another program since it was read: "
		 "not overwritten, the edit is dropped (remount to see the file as it is now)",
		 sv_container_path(c));
	T_STR(want, err.msg);
	now = slurp(mappath);
	T_UINT(orig.len, now.len);
	if (orig.len == now.len)
		T_MEM(orig.p, now.p, orig.len);
	sv_buf_fini(&now);
	sv_container_free(c);
	sv_buf_fini(&other);
	sv_buf_fini(&orig);
	dir_clean();
}

/* Commits keep the version and the magic. */
static void commit_keeps_format(void)
{
	static const struct {
		int version;
		const char *magic;
	} kinds[] = {{3, "DATA"}, {4, "ATAD"}, {3, "ATAD"}};
	for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
		struct sv_buf orig = fresh(kinds[k].version, kinds[k].magic);
		struct sv_container *c = open_file(mappath);
		struct sv_err err;
		uint32_t n = node_of(c, "data/00000.bin");
		T_INT(0, sv_write(c, n, 0, "J", 1, &err));
		sv_err_clear(&err);
		int rc = sv_flush(c, n, NULL, NULL, &err);
		if (rc)
			fprintf(stderr, "  (commit: %s)\n", err.msg);
		T_INT(0, rc);
		sv_container_free(c);
		c = open_file(mappath);
		json_t *h = json_of(c, "header.json");
		T_INT(kinds[k].version, jint(h, "version"));
		T_STR(kinds[k].magic, json_string_value(json_object_get(h, "magic")));
		json_decref(h);
		same(c, "data/00000.bin", "Jello, datafile\n", sizeof d_hello - 1);
		static const char *const skip[] = {"data/00000.bin", NULL};
		others_intact(c, skip);
		sv_container_free(c);
		struct sv_buf now = slurp(mappath);
		stored_same(&orig, &now, 2);
		sv_buf_fini(&now);
		sv_buf_fini(&orig);
	}
	dir_clean();
}

/* ---- readers and a committer at once ----------------------------------- */

struct reader {
	struct sv_container *c;
	unsigned seed;
	int bad;
	int *stop; /* set (atomically) when the committer is done */
};

/* data/00003.bin is being rewritten as "version N"; everything else must
 * read as in the fixture, whatever the commits do. */
static void *read_loop(void *arg)
{
	struct reader *r = arg;
	uint32_t s = r->seed;
	for (int i = 0; i < 3000 && !__atomic_load_n(r->stop, __ATOMIC_RELAXED); i++) {
		s = s * 1103515245u + 12345u;
		const struct expect *e = &files[(s >> 16) % NFILES];
		/* (The suffixed duplicate's name across commits is checked
		 * once, deterministically, in edit_and_commit.) */
		if (strchr(e->path, '~'))
			continue;
		uint32_t n;
		struct sv_blob *b = NULL;
		struct sv_err err;
		int rc = sv_resolve(r->c, e->path, &n);
		if (!rc)
			rc = sv_content(r->c, n, &b, &err);
		if (rc) {
			if (r->bad++ < 3)
				fprintf(stderr, "  (%s: %s)\n", e->path, strerror(-rc));
			continue;
		}
		bool ok;
		if (!strcmp(e->path, "data/00003.bin"))
			/* Being rewritten: empty between truncate and write. */
			ok = b->len == 0 || (b->len == 3 && !memcmp(b->data, "abc", 3)) ||
			     (b->len >= 9 && !memcmp(b->data, "version ", 8));
		else
			ok = b->len == e->len && (!e->len || !memcmp(b->data, e->p, e->len));
		if (!ok && r->bad++ < 3)
			fprintf(stderr, "  (%s: %zu bytes, \"%.*s\")\n", e->path, b->len,
				(int)(b->len < 20 ? b->len : 20), (const char *)b->data);
		sv_blob_unref(b);
	}
	return NULL;
}

static void concurrent(void)
{
	struct sv_buf orig = fresh(4, "DATA");
	struct sv_opts o;
	sv_opts_init(&o);
	o.cache_cap = 40000; /* smaller than data/00002.bin: it is decoded again */
	struct sv_container *c = NULL;
	struct sv_err err;
	T_INT(0, sv_container_open(mappath, &o, &c, &err));
	if (!c)
		return;
	uint32_t n = node_of(c, "data/00003.bin");
	int stop = 0;
	enum { NR = 3 };
	pthread_t th[NR];
	struct reader rd[NR];
	for (int i = 0; i < NR; i++) {
		rd[i] = (struct reader){.c = c, .seed = 7u + (unsigned)i, .stop = &stop};
		pthread_create(&th[i], NULL, read_loop, &rd[i]);
	}
	int commits = 0;
	for (int k = 0; k < 20; k++) {
		char text[32];
		int len = snprintf(text, sizeof text, "version %d", k);
		if (sv_truncate(c, n, 0, &err) || sv_write(c, n, 0, text, (size_t)len, &err))
			break;
		if (sv_flush(c, n, NULL, NULL, &err)) {
			fprintf(stderr, "  (commit: %s)\n", err.msg);
			break;
		}
		commits++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	int bad = 0;
	for (int i = 0; i < NR; i++) {
		pthread_join(th[i], NULL);
		bad += rd[i].bad;
	}
	T_INT(20, commits);
	T_INT(0, bad);
	T_UINT(n, node_of(c, "data/00003.bin"));
	same(c, "data/00003.bin", "version 19", 10);
	sv_container_free(c);
	c = open_file(mappath);
	same(c, "data/00003.bin", "version 19", 10);
	static const char *const skip[] = {"data/00003.bin", NULL};
	others_intact(c, skip);
	sv_container_free(c);
	struct sv_buf now = slurp(mappath);
	stored_same(&orig, &now, 2);
	sv_buf_fini(&now);
	sv_buf_fini(&orig);
	dir_clean();
}

int main(void)
{
	fixture_init();
	tree();
	versions_and_quirks();
	limits();
	node_names();
	snprintf(tmpdir, sizeof tmpdir, "/tmp/savefs-test-df-XXXXXX");
	if (!mkdtemp(tmpdir))
		die("mkdtemp");
	snprintf(mappath, sizeof mappath, "%s/m.map", tmpdir);
	edit_and_commit();
	refused_edits();
	unlink_item();
	create_entries();
	rename_onto_entry();
	changed_on_disk();
	commit_keeps_format();
	concurrent();
	unlink(mappath);
	rmdir(tmpdir);
	return t_done();
}
