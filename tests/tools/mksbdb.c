/*
 * mksbdb - writes Starbound databases and SBVJ01 files for savefs's tests
 * and benchmarks, with the project's own encoders and its copy-on-write
 * writer (core/fmt/starbound/btree5_cow.c), so that every file is one the game could
 * have left: keys sorted, index nodes within the game's limit, leaves split
 * where the game splits them, free-index chains, an exact device size.
 *
 * The output depends only on the arguments (a xorshift generator seeded
 * with -S).
 *
 *   mksbdb world OUT [options]
 *       A World4 database: metadata (a world of -W x -H sectors), a tile
 *       sector for each of the first -s sectors (row by row), an entity
 *       sector for each of the first -e, and the unique index.  Entities
 *       are objects (tilePosition) and stagehands (position); every fourth
 *       object has a uniqueId.  Sector 0,0's entities carry one long string
 *       (-L bytes of hex, little compressed): its leaf spans many blocks.
 *         -v 416|417|418   tile version (418 adds root tiles to objects)
 *         -b BYTES         block size (default 2048; 256 gives deep indexes)
 *         -c N             write in N commits (free-index chains, a stale
 *                          root slot) and remove a record in each but the
 *                          first
 *         -o               OpenStarbound's sub-version trailers
 *   mksbdb celestial OUT -n N [-s K]   (-s: K system objects a chunk, chunkIndex last)
 *       A Celestial2 database of N chunks (keys: SHA-256 of the chunk's
 *       coordinate as two big-endian int32, as the game keys them).
 *   mksbdb sbvj01 OUT [-o]
 *       A .player-like SBVJ01 file.
 *   mksbdb empty OUT [-b BYTES] [-k KEYSIZE] [-i ID]
 *       An empty database.
 *   mksbdb put FILE HEXKEY TEXT
 *       Commits one record (TEXT, deflated) into FILE in place, as the game
 *       would while savefs has it mounted: another program's root flip.
 */
#include "container.h"
#include "savefs.h"
#include "fmt/starbound/btree5_cow.h"
#include "fmt/starbound/sbon.h"
#include "fmt/starbound/sbworld.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void die(const char *what, const struct sv_err *e)
{
	fprintf(stderr, "mksbdb: %s%s%s\n", what, e ? ": " : "", e ? e->msg : "");
	exit(1);
}

/* ---- SHA-256 (FIPS 180-4), for Celestial2 keys ----------------------------------- */

static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2};

#define ROR(x, n) ((x) >> (n) | (x) << (32 - (n)))

/* SHA-256 of a message of at most 55 bytes (one block). */
static void sha256_short(const uint8_t *m, size_t n, uint8_t out[32])
{
	uint8_t blk[64] = {0};
	memcpy(blk, m, n);
	blk[n] = 0x80;
	uint64_t bits = (uint64_t)n * 8;
	for (int i = 0; i < 8; i++)
		blk[63 - i] = (uint8_t)(bits >> (8 * i));
	uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)blk[4 * i] << 24 | (uint32_t)blk[4 * i + 1] << 16 |
		       (uint32_t)blk[4 * i + 2] << 8 | blk[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) +
			      K256[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++)
			out[4 * i + k] = (uint8_t)(h[i] >> (24 - 8 * k));
}

/* ---- records ------------------------------------------------------------------- */

struct rec {
	uint8_t key[32];
	struct sv_buf val; /* deflated */
};

static struct rec *recs;
static size_t nrecs, caprecs;
static uint32_t keysize = 5;

static struct rec *add(const uint8_t *key)
{
	if (nrecs == caprecs) {
		caprecs = caprecs * 2 + 64;
		recs = realloc(recs, caprecs * sizeof *recs);
		if (!recs)
			die("out of memory", NULL);
	}
	struct rec *r = &recs[nrecs++];
	memcpy(r->key, key, keysize);
	sv_buf_init(&r->val);
	return r;
}

static void put_value(struct rec *r, const struct sv_buf *raw)
{
	if (sv_deflate(raw->p, raw->len, -1, &r->val))
		die("out of memory", NULL);
}

static int cmp_rec(const void *a, const void *b)
{
	return memcmp(((const struct rec *)a)->key, ((const struct rec *)b)->key, keysize);
}

static int rd_fd(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	if (pread(*(int *)arg, buf, n, (off_t)off) != (ssize_t)n)
		return sv_err_set(err, -EIO, "read failed");
	return 0;
}

static struct sv_bt5_tree *load(int fd)
{
	uint8_t hdr[SV_BT5_HEADER];
	struct sv_err e;
	struct sv_bt5 h;
	struct sv_bt5_tree *t;
	off_t size = lseek(fd, 0, SEEK_END);
	if (pread(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr ||
	    sv_bt5_header(hdr, sizeof hdr, (uint64_t)size, &h, &e) ||
	    sv_bt5_tree_load(&h, rd_fd, &fd, &t, &e))
		die("reading back", &e);
	return t;
}

/* Writes recs (sorted) in `commits` commits; in each after the first, the
 * first record of the previous batch is removed and put back. */
static void write_db(const char *out, uint32_t bs, const char *id, int commits)
{
	int fd = open(out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct sv_err e;
	if (fd < 0)
		die(out, NULL);
	if (sv_bt5_create(fd, bs, id, keysize, &e))
		die("creating", &e);
	qsort(recs, nrecs, sizeof *recs, cmp_rec);
	if (commits < 1)
		commits = 1;
	struct sv_bt5_change *ch = calloc(nrecs + 1, sizeof *ch);
	size_t done = 0;
	for (int k = 0; k < commits; k++) {
		/* Batches of records interleaved across the key space, so that
		 * later commits split and rewrite earlier leaves. */
		size_t n = 0;
		for (size_t i = (size_t)k; i < nrecs; i += (size_t)commits) {
			ch[n].key = recs[i].key;
			ch[n].val = recs[i].val.p;
			ch[n].len = recs[i].val.len;
			n++;
		}
		struct sv_bt5_tree *t = load(fd), *nw;
		if (sv_bt5_tree_commit(t, fd, ch, n, NULL, &nw, &e))
			die("commit", &e);
		sv_bt5_tree_free(t);
		sv_bt5_tree_free(nw);
		done += n;
		if (k + 1 < commits && n) {
			/* Remove one record and write it again next time. */
			struct sv_bt5_change del = {ch[0].key, NULL, 0};
			t = load(fd);
			if (sv_bt5_tree_commit(t, fd, &del, 1, NULL, &nw, &e))
				die("commit", &e);
			sv_bt5_tree_free(t);
			sv_bt5_tree_free(nw);
			struct sv_bt5_change put = ch[0];
			t = load(fd);
			if (sv_bt5_tree_commit(t, fd, &put, 1, NULL, &nw, &e))
				die("commit", &e);
			sv_bt5_tree_free(t);
			sv_bt5_tree_free(nw);
		}
	}
	(void)done;
	free(ch);
	if (fsync(fd) || close(fd))
		die("closing", NULL);
}

/* ---- World4 ----------------------------------------------------------------------- */

static void world_key(uint8_t *k, unsigned type, unsigned x, unsigned y)
{
	k[0] = (uint8_t)type;
	k[1] = (uint8_t)(x >> 8);
	k[2] = (uint8_t)x;
	k[3] = (uint8_t)(y >> 8);
	k[4] = (uint8_t)y;
}

static json_t *versioned(const char *id, int version, json_t *content, bool trailer)
{
	json_t *o = json_pack("{sssiso}", "id", id, "version", version, "content", content);
	if (trailer)
		json_object_set_new(o, "subversions", json_pack("{si}", "ostest", 1));
	return o;
}

static void tile_sector(unsigned sx, unsigned sy, unsigned version, bool objects,
			struct sv_sb_sector *s)
{
	memset(s, 0, sizeof *s);
	s->version = version;
	s->generation = sy % 6;
	for (int i = 0; i < SV_SB_TILES; i++) {
		struct sv_sb_tile *t = &s->t[i];
		unsigned y = sy * 32 + (unsigned)i / 32;
		bool ground = y < 40 + rnd() % 3;
		t->fg.material = ground ? (uint16_t)(1 + rnd() % 12) : 65535;
		t->bg.material = ground || rnd() % 4 == 0 ? (uint16_t)(1 + rnd() % 12) : 65535;
		t->fg.hue = (uint8_t)(rnd() % 4 ? 0 : rnd());
		t->fg.colour = (uint8_t)(rnd() % 3);
		t->fg.mod = rnd() % 8 ? 65535 : (uint16_t)(rnd() % 50);
		t->bg.mod = 65535;
		t->liquid = !ground && y < 44 && rnd() % 3 == 0 ? (uint8_t)(1 + rnd() % 3) : 0;
		t->level = t->liquid ? (float)(rnd() % 1000) / 1000.0f + 0.001f : 0;
		t->pressure = t->liquid ? (float)(rnd() % 100000) / 7.0f : 0;
		t->source = t->liquid && rnd() % 5 == 0;
		t->collision = ground ? 5 : 1;
		t->dungeon = rnd() % 16 ? 65535 : (uint16_t)(rnd() % 40);
		t->biome = (uint8_t)(sx % 5);
		t->env_biome = (uint8_t)(sx % 5 + 1);
		t->transition = version >= 417 && rnd() % 9 == 0;
		t->ignored = 0;
		if (version >= 418 && objects && i % 97 == 5) {
			t->has_root = true;
			t->root_x = (int32_t)(sx * 32 + (unsigned)i % 32);
			t->root_y = (int32_t)y;
		}
	}
}

struct unique {
	char id[40];
	unsigned sx, sy;
	float x, y;
};

static int world(int argc, char **argv)
{
	const char *out = argv[2];
	unsigned sectors = 12, ent_sectors = 6, version = 416, bs = 2048, wide = 4, high = 3;
	unsigned longlen = 90000;
	int commits = 1;
	bool trailer = false;
	int o;
	optind = 3;
	while ((o = getopt(argc, argv, "s:e:v:b:c:oS:W:H:L:")) != -1) {
		switch (o) {
		case 's': sectors = (unsigned)atoi(optarg); break;
		case 'e': ent_sectors = (unsigned)atoi(optarg); break;
		case 'v': version = (unsigned)atoi(optarg); break;
		case 'b': bs = (unsigned)atoi(optarg); break;
		case 'c': commits = atoi(optarg); break;
		case 'o': trailer = true; break;
		case 'S': rng += (uint64_t)atoll(optarg) * 0x9e3779b97f4a7c15ull; break;
		case 'W': wide = (unsigned)atoi(optarg); break;
		case 'H': high = (unsigned)atoi(optarg); break;
		case 'L': longlen = (unsigned)atoi(optarg); break;
		default: return 2;
		}
	}
	while (wide * high < sectors || wide * high < ent_sectors)
		high++;
	struct sv_err e;
	struct sv_buf raw;
	uint8_t key[5];
	/* Metadata. */
	json_t *meta = versioned("WorldMetadata", 20,
				 json_pack("{s{ss si}sfsb}", "worldTemplate", "seed", "mksbdb",
					   "threatLevel", 3, "gravity", 80.5, "adjustedSpace", 1),
				 trailer);
	json_object_set_new(meta, "width", json_integer(wide * 32));
	json_object_set_new(meta, "height", json_integer(high * 32));
	sv_buf_init(&raw);
	if (sv_sb_metadata_write(meta, &raw, &e))
		die("metadata", &e);
	world_key(key, 0, 0, 0);
	put_value(add(key), &raw);
	sv_buf_fini(&raw);
	json_decref(meta);
	/* Tiles. */
	struct sv_sb_sector *s = malloc(sizeof *s);
	for (unsigned i = 0; i < sectors; i++) {
		unsigned sx = i % wide, sy = i / wide;
		tile_sector(sx, sy, version, i < ent_sectors, s);
		sv_buf_init(&raw);
		if (sv_sb_sector_write(s, &raw, &e))
			die("sector", &e);
		world_key(key, 1, sx, sy);
		put_value(add(key), &raw);
		sv_buf_fini(&raw);
	}
	free(s);
	/* Entities and the unique index. */
	struct unique *u = calloc((size_t)ent_sectors * 8 + 1, sizeof *u);
	size_t nu = 0;
	for (unsigned i = 0; i < ent_sectors; i++) {
		unsigned sx = i % wide, sy = i / wide;
		json_t *ents = json_array();
		unsigned n = 1 + rnd() % 6;
		for (unsigned k = 0; k < n; k++) {
			int tx = (int)(sx * 32 + rnd() % 32), ty = (int)(sy * 32 + rnd() % 32);
			json_t *content;
			const char *id;
			if (k % 2 == 0) {
				id = "ObjectEntity";
				content = json_pack("{sss[ii]sssis{sssf}}", "name", "woodenchest",
						    "tilePosition", tx, ty, "direction", "left",
						    "orientationIndex", (int)(rnd() % 3), "parameters",
						    "description", "a chest", "scale", 1.25);
				if (k % 4 == 0) {
					struct unique *q = &u[nu++];
					snprintf(q->id, sizeof q->id, "chest-%u-%u", i, k);
					q->sx = sx;
					q->sy = sy;
					q->x = (float)tx;
					q->y = (float)ty;
					json_object_set_new(content, "uniqueId", json_string(q->id));
				}
			} else {
				id = "StagehandEntity";
				content = json_pack("{s[ff]s{ssss}}", "position", tx + 0.5, ty + 0.25,
						    "parameters", "type", "positionmarker", "note", "héllo");
			}
			json_array_append_new(ents, versioned(id, 1 + (int)k % 3, content, trailer));
		}
		if (i == 0 && longlen) {
			/* One long value: hex of random bytes deflates to half. */
			char *big = malloc(longlen + 1);
			for (unsigned k = 0; k < longlen; k++)
				big[k] = "0123456789abcdef"[rnd() % 16];
			big[longlen] = 0;
			json_array_append_new(ents, versioned("ItemDropEntity", 2,
							      json_pack("{s[ff]s{ssss}}", "position",
									1.5, 2.5, "item", "name",
									"note", "data", big),
							      trailer));
			free(big);
		}
		sv_buf_init(&raw);
		if (sv_sb_entities_write(ents, &raw, &e))
			die("entities", &e);
		world_key(key, 2, sx, sy);
		put_value(add(key), &raw);
		sv_buf_fini(&raw);
		json_decref(ents);
		/* The sector's unique ids (type 4). */
		json_t *ids = json_array();
		for (size_t k = 0; k < nu; k++)
			if (u[k].sx == sx && u[k].sy == sy)
				json_array_append_new(ids, json_string(u[k].id));
		if (json_array_size(ids)) {
			sv_buf_init(&raw);
			sv_sb_usector_write(ids, &raw, &e);
			world_key(key, 4, sx, sy);
			put_value(add(key), &raw);
			sv_buf_fini(&raw);
		}
		json_decref(ids);
	}
	/* Buckets (type 3), by xxHash32 of the id. */
	for (size_t k = 0; k < nu; k++) {
		uint32_t h = XXH32(u[k].id, strlen(u[k].id), 0);
		uint8_t bk[5] = {3, (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8),
				 (uint8_t)h};
		bool dup = false;
		for (size_t j = 0; j < k; j++)
			dup |= XXH32(u[j].id, strlen(u[j].id), 0) == h;
		if (dup)
			continue;
		json_t *b = json_object();
		for (size_t j = k; j < nu; j++)
			if (XXH32(u[j].id, strlen(u[j].id), 0) == h)
				json_object_set_new(b, u[j].id,
						    json_pack("{s[ii]s[ff]}", "sector", u[j].sx, u[j].sy,
							      "position", (double)u[j].x, (double)u[j].y));
		sv_buf_init(&raw);
		if (sv_sb_ubucket_write(b, &raw, &e))
			die("bucket", &e);
		put_value(add(bk), &raw);
		sv_buf_fini(&raw);
		json_decref(b);
	}
	free(u);
	write_db(out, bs, "World4", commits);
	return 0;
}

static int celestial(int argc, char **argv)
{
	unsigned n = 100, objects = 0;
	int o;
	optind = 3;
	keysize = 32;
	while ((o = getopt(argc, argv, "n:b:s:")) != -1) {
		if (o == 'n')
			n = (unsigned)atoi(optarg);
		else if (o == 's')
			objects = (unsigned)atoi(optarg);
		else
			return 2;
	}
	struct sv_err e;
	unsigned side = 1;
	while (side * side < n)
		side++;
	for (unsigned i = 0; i < n; i++) {
		int x = (int)(i % side) - (int)side / 2, y = (int)(i / side) - (int)side / 2;
		uint8_t coord[8] = {(uint8_t)(x >> 24), (uint8_t)(x >> 16), (uint8_t)(x >> 8), (uint8_t)x,
				    (uint8_t)(y >> 24), (uint8_t)(y >> 16), (uint8_t)(y >> 8), (uint8_t)y};
		uint8_t key[32];
		sha256_short(coord, 8, key);
		json_t *content;
		if (!objects) {
			content = json_pack("{s[ii]s[]s[[[iii]{sssi}]]s[]}", "chunkIndex", x, y,
					    "constellations", "systemParameters", x * 30, y * 30,
					    (int)(rnd() % 100), "name", "system", "seed",
					    (int)rnd(), "systemObjects");
		} else {
			/* As the game writes them: big values of system objects
			 * (each with its parameters), chunkIndex the last key. */
			json_t *objs = json_array();
			for (unsigned k = 0; k < objects; k++)
				json_array_append_new(objs, json_pack(
					"[[iii]{sssis{sfsfsssis[ffff]}}]", x * 30, y * 30, (int)k,
					"name", "planet", "seed", (int)rnd(), "parameters",
					"gravity", (double)(rnd() % 1000) / 7.0, "radius",
					(double)(rnd() % 1000) / 3.0, "biome", "forest", "threat",
					(int)(rnd() % 10), "colour", (double)rnd() / 65536.0,
					(double)rnd() / 65536.0, (double)rnd() / 65536.0, 1.0));
			content = json_pack("{s[]s[[[iii]{sssi}]]sos[ii]}", "constellations",
					    "systemParameters", x * 30, y * 30, (int)(rnd() % 100),
					    "name", "system", "seed", (int)rnd(), "systemObjects", objs,
					    "chunkIndex", x, y);
		}
		json_t *v = versioned("CelestialChunk", 1, content, false);
		struct sv_buf raw;
		sv_buf_init(&raw);
		if (sv_sb_vdoc_write(v, &raw, &e))
			die("chunk", &e);
		put_value(add(key), &raw);
		sv_buf_fini(&raw);
		json_decref(v);
	}
	write_db(argv[2], 2048, "Celestial2", 1);
	return 0;
}

static int sbvj01(int argc, char **argv)
{
	bool trailer = argc > 3 && !strcmp(argv[3], "-o");
	json_t *v = versioned("PlayerEntity", 30,
			      json_pack("{sss{ss sf}s[{sssi}{sssi}]sb}", "uuid",
					"0123456789abcdef0123456789abcdef", "identity", "name", "Tester",
					"personalityHeadOffset", 0.5, "inventory", "name", "torch",
					"count", 20, "name", "pickaxe", "count", 1, "admin", 0),
			      trailer);
	struct sv_buf b;
	struct sv_err e;
	sv_buf_init(&b);
	sv_buf_add(&b, "SBVJ01", 6);
	if (sv_sb_vdoc_write(v, &b, &e))
		die("sbvj01", &e);
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || sv_write_all(fd, b.p, b.len) || close(fd))
		die(argv[2], NULL);
	sv_buf_fini(&b);
	json_decref(v);
	return 0;
}

static int empty(int argc, char **argv)
{
	uint32_t bs = 2048;
	const char *id = "World4";
	int o;
	optind = 3;
	while ((o = getopt(argc, argv, "b:k:i:")) != -1) {
		switch (o) {
		case 'b': bs = (uint32_t)atoi(optarg); break;
		case 'k': keysize = (uint32_t)atoi(optarg); break;
		case 'i': id = optarg; break;
		default: return 2;
		}
	}
	write_db(argv[2], bs, id, 1);
	return 0;
}

static int put(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	int fd = open(argv[2], O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die(argv[2], NULL);
	struct sv_bt5_tree *t = load(fd), *nw;
	uint8_t key[256];
	size_t n = strlen(argv[3]) / 2;
	if (n != t->h.key_size)
		die("the key's length is not the database's key size", NULL);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(argv[3] + 2 * i, "%2x", &v);
		key[i] = (uint8_t)v;
	}
	struct sv_buf z;
	struct sv_err e;
	sv_buf_init(&z);
	sv_deflate((const uint8_t *)argv[4], strlen(argv[4]), -1, &z);
	struct sv_bt5_change ch = {key, z.p, z.len};
	if (sv_bt5_tree_commit(t, fd, &ch, 1, NULL, &nw, &e))
		die("commit", &e);
	sv_bt5_tree_free(t);
	sv_bt5_tree_free(nw);
	sv_buf_fini(&z);
	return close(fd) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: mksbdb world|celestial|sbvj01|empty OUT [options]\n");
		return 2;
	}
	if (!strcmp(argv[1], "world"))
		return world(argc, argv);
	if (!strcmp(argv[1], "celestial"))
		return celestial(argc, argv);
	if (!strcmp(argv[1], "sbvj01"))
		return sbvj01(argc, argv);
	if (!strcmp(argv[1], "empty"))
		return empty(argc, argv);
	if (!strcmp(argv[1], "put"))
		return put(argc, argv);
	fprintf(stderr, "mksbdb: unknown kind %s\n", argv[1]);
	return 2;
}
