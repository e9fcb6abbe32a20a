/*
 * mkrecording - writes replay recordings (format version 4) the way the
 * recorder and the compactor write them, from the format notes
 * (../shared/formats/recording.md), for the tests and the benchmark.
 *
 *   mkrecording compacted FILE [options]
 *   mkrecording segmented DIR [options]
 *   mkrecording live DIR [options]     one segment committed every -i ms
 *
 * options:
 *   -n TICKS      ticks recorded (default 250)
 *   -k TICKS      ticks a chunk at most (default 100)
 *   -S CHUNKS     chunks a segment (default 2)
 *   -e N          entities besides the player (default 2)
 *   -s SEED       (default 1)
 *   -z LEVEL      zstd level (default 19 compacted, 3 segmented)
 *   -i MS         live: milliseconds between commits (default 300)
 *   -m SNBT       the metadata, as SNBT (default {map: "mkrecording"})
 *   --builtin     only the library's events (ids 0-9)
 *   --unfinished  no `finished` file at the end
 *   --leftovers   also leave what a crashed recorder leaves: a stale
 *                 .preamble-*.tmp and a segment the preamble does not name
 *   --quiet
 *
 * Every tick has a record; the first tick of every chunk carries the
 * snapshot (spawn, state, full slot map, item use, clear ghost blocks, the
 * ghost blocks, then an absolute move for every entity), as the recorder
 * writes it.  Other ticks: delta moves (velocities zero, small, and past
 * scale 3, which takes the VarInt continuation), hand swings, state
 * changes, held slots, item NBT, ghost blocks at negative coordinates,
 * spawns and despawns, and with the parkour table the run events 10-14.
 */
#include "fmt/recording/nbt.h"
#include "fmt/recording/rcevents.h"
#include "rd.h"
#include "container.h"
#include "savefs.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define MAX_ENTS 64
#define MAX_GHOSTS 32

struct ent {
	int32_t id, type;
	bool alive;
	int64_t qx, qy, qz; /* position in 1/4096 blocks */
	float yaw, pitch;
	int32_t pose, flags, held;
	int32_t slots[4];   /* item ids in slots 0, 1, 36, 45; 0 = empty */
	bool using_;
};

struct gen {
	uint64_t rng;
	bool builtin;
	struct ent ents[MAX_ENTS];
	int nents, next_id;
	int64_t ghosts[MAX_GHOSTS][3];
	int32_t ghost_state[MAX_GHOSTS];
	int nghosts;
	int64_t run_ms;
};

static uint32_t rnd(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return (uint32_t)(g->rng >> 32);
}

static void die(const char *what)
{
	fprintf(stderr, "mkrecording: %s\n", what);
	exit(1);
}

static void put(struct sv_buf *b, const void *p, size_t n)
{
	if (sv_buf_add(b, p, n))
		die("out of memory");
}

static void be(struct sv_buf *b, uint64_t v, int n)
{
	uint8_t t[8];
	for (int i = 0; i < n; i++)
		t[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	put(b, t, (size_t)n);
}

static void vi(struct sv_buf *b, int32_t v)
{
	if (sv_put_leb(b, (uint32_t)v))
		die("out of memory");
}

static void vl(struct sv_buf *b, int64_t v)
{
	if (sv_put_leb(b, (uint64_t)v))
		die("out of memory");
}

static void f64(struct sv_buf *b, double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	be(b, u, 8);
}

static void f32(struct sv_buf *b, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	be(b, u, 4);
}

/* The game's LP vector, as LpVec3 writes it. */
static void lp_vector(struct sv_buf *b, double x, double y, double z)
{
	double m = fmax(fabs(x), fmax(fabs(y), fabs(z)));
	if (m < 3.051944088384301e-5) {
		be(b, 0, 1);
		return;
	}
	int64_t scale = (int64_t)ceil(m);
	bool big = (scale & 3) != scale;
	uint64_t flags = big ? (uint64_t)(scale & 3) | 4 : (uint64_t)scale;
	uint64_t px = (uint64_t)llround((x / (double)scale * 0.5 + 0.5) * 32766.0);
	uint64_t py = (uint64_t)llround((y / (double)scale * 0.5 + 0.5) * 32766.0);
	uint64_t pz = (uint64_t)llround((z / (double)scale * 0.5 + 0.5) * 32766.0);
	uint64_t packed = flags | px << 3 | py << 18 | pz << 33;
	be(b, packed & 0xff, 1);
	be(b, packed >> 8 & 0xff, 1);
	be(b, packed >> 16 & 0xffffffffu, 4);
	if (big)
		vi(b, (int32_t)(scale >> 2));
}

static void velocity(struct gen *g, struct sv_buf *b)
{
	switch (rnd(g) % 3) {
	case 0:
		lp_vector(b, 0, 0, 0);
		break;
	case 1:
		lp_vector(b, (rnd(g) % 200) / 100.0 - 1, -0.0784, (rnd(g) % 100) / 100.0);
		break;
	default:
		lp_vector(b, 12.5, -(double)(rnd(g) % 40), 3.25);
		break;
	}
}

static const char *const item_ids[] = {"", "minecraft:stone", "minecraft:diamond_sword",
				       "minecraft:elytra", "minecraft:ender_pearl",
				       "minecraft:written_book"};

/* An item as the game's network NBT: {id, count[, components]}. */
static void item(struct sv_buf *b, int32_t id, uint32_t seed)
{
	if (!id) {
		be(b, 0, 1); /* an empty slot: an end tag */
		return;
	}
	const char *name = item_ids[id];
	char snbt[400];
	if (id == 5)
		snprintf(snbt, sizeof snbt,
			 "{id: \"%s\", count: 1, components: {\"minecraft:written_book_content\": "
			 "{title: {raw: \"Pages \\u00e9t\\u00e9 \\ud83d\\ude00\"}, pages: [{raw: "
			 "\"line \\\"one\\\"\\nline two\"}], generation: %ub, author: \"\"}, "
			 "\"minecraft:custom_data\": {seeds: [L; 1L, -%uL], bytes: [B; 1b, -2b], "
			 "ints: [I;], f: %u.5f, d: -0.0025d, s: 7s}}}",
			 name, seed % 3, seed, seed % 100);
	else
		snprintf(snbt, sizeof snbt, "{id: \"%s\", count: %u}", name, 1 + seed % 64);
	struct sv_nbt v;
	struct sv_err err;
	if (sv_snbt_parse(snbt, strlen(snbt), &v, &err))
		die(err.msg);
	if (sv_nbt_write(b, &v))
		die("cannot write an item");
	sv_nbt_fini(&v);
}

static const int slot_no[4] = {0, 1, 36, 45};

static void ev_spawn(struct sv_buf *b, const struct ent *e)
{
	vi(b, 8);
	vi(b, e->id);
	vi(b, e->type);
	f64(b, (double)e->qx / 4096.0);
	f64(b, (double)e->qy / 4096.0);
	f64(b, (double)e->qz / 4096.0);
	f32(b, e->yaw);
	f32(b, e->pitch);
}

static void ev_abs(struct gen *g, struct sv_buf *b, const struct ent *e)
{
	vi(b, 1);
	vi(b, e->id);
	f64(b, (double)e->qx / 4096.0);
	f64(b, (double)e->qy / 4096.0);
	f64(b, (double)e->qz / 4096.0);
	f32(b, e->yaw);
	f32(b, e->pitch);
	velocity(g, b);
}

static void ev_state(struct sv_buf *b, const struct ent *e)
{
	vi(b, 2);
	vi(b, e->id);
	vi(b, e->pose);
	be(b, (uint64_t)e->flags & 0xff, 1);
}

static void ev_items(struct gen *g, struct sv_buf *b, const struct ent *e, int only)
{
	vi(b, 5);
	vi(b, e->id);
	vi(b, only < 0 ? 4 : 1);
	for (int k = 0; k < 4; k++) {
		if (only >= 0 && k != only)
			continue;
		vi(b, slot_no[k]);
		item(b, e->slots[k], rnd(g));
	}
}

static void ev_use(struct sv_buf *b, const struct ent *e)
{
	vi(b, 4);
	vi(b, e->id);
	be(b, e->using_, 1);
	if (e->using_)
		vi(b, 0);
}

static void ev_block(struct sv_buf *b, const int64_t *p, int32_t state)
{
	vi(b, 7);
	uint64_t v = ((uint64_t)p[0] & 0x3ffffff) << 38 | ((uint64_t)p[2] & 0x3ffffff) << 12 |
		     ((uint64_t)p[1] & 0xfff);
	be(b, v, 8);
	vi(b, state);
}

/* One tick's record. */
static void tick(struct gen *g, struct sv_buf *out, uint32_t t, bool snapshot)
{
	struct sv_buf ev;
	sv_buf_init(&ev);
	int count = 0;
	if (snapshot) {
		for (int i = 0; i < g->nents; i++)
			if (g->ents[i].alive) {
				ev_spawn(&ev, &g->ents[i]);
				ev_state(&ev, &g->ents[i]);
				ev_items(g, &ev, &g->ents[i], -1);
				ev_use(&ev, &g->ents[i]);
				count += 4;
			}
		if (!g->builtin) {
			vi(&ev, 14);
			count++;
		}
		for (int k = 0; k < g->nghosts; k++) {
			ev_block(&ev, g->ghosts[k], g->ghost_state[k]);
			count++;
		}
		for (int i = 0; i < g->nents; i++)
			if (g->ents[i].alive) {
				ev_abs(g, &ev, &g->ents[i]);
				count++;
			}
	} else if (t % 17 != 5) { /* now and then a tick with no events */
		for (int i = 0; i < g->nents; i++) {
			struct ent *e = &g->ents[i];
			if (!e->alive)
				continue;
			int64_t d[3] = {(int64_t)(rnd(g) % 1200) - 300, (int64_t)(rnd(g) % 9) - 4,
					(int64_t)(rnd(g) % 800) - 400};
			e->qx += d[0];
			e->qy += d[1];
			e->qz += d[2];
			int16_t yaw = (int16_t)(rnd(g) & 0xffff), pitch = (int16_t)(rnd(g) % 8000);
			e->yaw = (float)(yaw / (65536 / 360.0));
			e->pitch = (float)(pitch / (65536 / 360.0));
			vi(&ev, 0);
			vi(&ev, e->id);
			for (int k = 0; k < 3; k++)
				vl(&ev, (int64_t)((uint64_t)d[k] << 1) ^ (d[k] >> 63));
			be(&ev, (uint16_t)yaw, 2);
			be(&ev, (uint16_t)pitch, 2);
			velocity(g, &ev);
			count++;
		}
		struct ent *p = &g->ents[0];
		switch (rnd(g) % 16) {
		case 0:
			vi(&ev, 3);
			vi(&ev, p->id);
			vi(&ev, (int32_t)(rnd(g) % 2));
			count++;
			break;
		case 1:
			p->pose = (int32_t)(rnd(g) % 6);
			p->flags = (int32_t)(rnd(g) & 0xff);
			ev_state(&ev, p);
			count++;
			break;
		case 2:
			p->held = (int32_t)(rnd(g) % 9);
			vi(&ev, 6);
			vi(&ev, p->id);
			vi(&ev, p->held);
			count++;
			break;
		case 3: {
			int k = (int)(rnd(g) % 4);
			p->slots[k] = (int32_t)(rnd(g) % 6);
			ev_items(g, &ev, p, k);
			count++;
			break;
		}
		case 4:
			p->using_ = !p->using_;
			ev_use(&ev, p);
			count++;
			break;
		case 5:
			if (g->nghosts < MAX_GHOSTS) {
				int64_t *q = g->ghosts[g->nghosts];
				q[0] = -(int64_t)(rnd(g) % 30000000);
				q[1] = (int64_t)(rnd(g) % 4000) - 2048;
				q[2] = (int64_t)(rnd(g) % 60000000) - 30000000;
				g->ghost_state[g->nghosts] = (int32_t)(rnd(g) % 30000);
				ev_block(&ev, q, g->ghost_state[g->nghosts++]);
				count++;
			}
			break;
		case 6:
			if (g->nents < MAX_ENTS) {
				struct ent *e = &g->ents[g->nents++];
				memset(e, 0, sizeof *e);
				e->id = g->next_id++;
				e->type = (int32_t)(rnd(g) % 150);
				e->alive = true;
				e->qx = p->qx + 4096;
				e->qy = p->qy;
				e->qz = p->qz - 8192;
				ev_spawn(&ev, e);
				ev_abs(g, &ev, e);
				count += 2;
			}
			break;
		case 7:
			for (int i = g->nents - 1; i > 0; i--)
				if (g->ents[i].alive) {
					g->ents[i].alive = false;
					vi(&ev, 9);
					vi(&ev, g->ents[i].id);
					count++;
					break;
				}
			break;
		case 8:
			if (!g->builtin) {
				g->run_ms += 50 * (int64_t)(rnd(g) % 400);
				switch (rnd(g) % 5) {
				case 0:
					vi(&ev, 10);
					break;
				case 1: {
					char name[40];
					int n = snprintf(name, sizeof name, "checkpoint %u \xc3\xa9",
							 rnd(g) % 20);
					vi(&ev, 11);
					vi(&ev, n);
					put(&ev, name, (size_t)n);
					vl(&ev, g->run_ms);
					break;
				}
				case 2:
					vi(&ev, 12);
					vi(&ev, (int32_t)(rnd(g) % 11));
					vl(&ev, g->run_ms);
					break;
				case 3:
					vi(&ev, 13);
					vi(&ev, (int32_t)(rnd(g) % 3));
					vl(&ev, g->run_ms);
					break;
				default:
					vi(&ev, 14);
					g->nghosts = 0;
					break;
				}
				count++;
			}
			break;
		}
	}
	vi(out, (int32_t)t);
	be(out, (uint16_t)count, 2);
	put(out, ev.p, ev.len);
	sv_buf_fini(&ev);
}

struct index_entry {
	uint32_t start, ticks;
	uint64_t offset;
	uint32_t clen, ulen;
};

struct rec {
	struct sv_buf meta;
	struct index_entry *idx;
	uint32_t n, cap;
	uint32_t ticks;
	uint8_t world_id[16];
};

/* Header, metadata and index, the offsets as r->idx holds them. */
static void preamble(const struct rec *r, struct sv_buf *out)
{
	struct sv_buf idx;
	sv_buf_init(&idx);
	for (uint32_t i = 0; i < r->n; i++) {
		vi(&idx, (int32_t)r->idx[i].start);
		vi(&idx, (int32_t)r->idx[i].ticks);
		be(&idx, 1, 1);
		be(&idx, r->idx[i].offset, 8);
		vi(&idx, (int32_t)r->idx[i].clen);
		vi(&idx, (int32_t)r->idx[i].ulen);
	}
	uint8_t h[256] = {0};
	memcpy(h, "HCRP", 4);
	h[5] = 4;
	memcpy(h + 8, r->world_id, 16);
	h[24] = 16;
	for (int i = 0; i < 16; i++)
		h[25 + i] = (uint8_t)(0xa0 + i);
	struct sv_buf t;
	sv_buf_init(&t);
	be(&t, 1786000000000ull, 8);
	be(&t, 0, 2);
	be(&t, r->meta.len, 4);
	be(&t, idx.len, 4);
	be(&t, r->ticks, 4);
	be(&t, r->n, 4);
	be(&t, 4671, 4);
	memcpy(h + 41, t.p, t.len);
	sv_buf_fini(&t);
	put(out, h, sizeof h);
	put(out, r->meta.p, r->meta.len);
	put(out, idx.p, idx.len);
	sv_buf_fini(&idx);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		die(path);
}

/* As the recorder: a temporary file in the directory, renamed over. */
static void write_preamble(const char *dir, const struct rec *r)
{
	struct sv_buf b;
	sv_buf_init(&b);
	preamble(r, &b);
	char tmp[4096], dst[4096];
	snprintf(tmp, sizeof tmp, "%s/.preamble-XXXXXX.tmp", dir);
	int fd = mkstemps(tmp, 4);
	if (fd < 0 || write(fd, b.p, b.len) != (ssize_t)b.len || close(fd))
		die("cannot write the preamble");
	snprintf(dst, sizeof dst, "%s/preamble.dat", dir);
	if (rename(tmp, dst))
		die("cannot rename the preamble");
	sv_buf_fini(&b);
}

static void add_entry(struct rec *r, struct index_entry e)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->idx = realloc(r->idx, r->cap * sizeof *r->idx);
		if (!r->idx)
			die("out of memory");
	}
	r->idx[r->n++] = e;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		die("usage: mkrecording compacted FILE | segmented DIR | live DIR [options]");
	const char *mode = argv[1], *out = argv[2];
	bool compacted = !strcmp(mode, "compacted"), live = !strcmp(mode, "live");
	if (!compacted && !live && strcmp(mode, "segmented"))
		die("the modes are compacted, segmented and live");
	uint32_t ticks = 250, per_chunk = 100, per_seg = 2, ents = 2, interval = 300;
	int level = compacted ? 19 : 3;
	uint64_t seed = 1;
	bool builtin = false, unfinished = false, leftovers = false, quiet = false;
	const char *meta = "{map: \"mkrecording\"}";
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--builtin"))
			builtin = true;
		else if (!strcmp(a, "--unfinished"))
			unfinished = true;
		else if (!strcmp(a, "--leftovers"))
			leftovers = true;
		else if (!strcmp(a, "--quiet"))
			quiet = true;
		else if (v && !strcmp(a, "-n"))
			ticks = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (v && !strcmp(a, "-k"))
			per_chunk = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (v && !strcmp(a, "-S"))
			per_seg = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (v && !strcmp(a, "-e"))
			ents = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (v && !strcmp(a, "-s"))
			seed = strtoull(argv[++i], NULL, 10);
		else if (v && !strcmp(a, "-z"))
			level = atoi(argv[++i]);
		else if (v && !strcmp(a, "-i"))
			interval = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (v && !strcmp(a, "-m"))
			meta = argv[++i];
		else
			die("unknown option (see the comment at the top of mkrecording.c)");
	}
	if (!per_chunk || !per_seg || ents + 1 > MAX_ENTS / 2)
		die("bad option value");
	struct gen g = {.rng = seed * 0x9e3779b97f4a7c15ull + 1, .builtin = builtin};
	for (uint32_t i = 0; i <= ents; i++) {
		struct ent *e = &g.ents[g.nents++];
		e->id = g.next_id++;
		e->type = i ? (int32_t)(10 + i) : 155;
		e->alive = true;
		e->qx = (int64_t)(i * 3) * 4096 + 2048;
		e->qy = 64 * 4096;
		e->qz = -(int64_t)i * 4096 + 2048;
		e->slots[0] = 1;
		e->slots[2] = (int32_t)(2 + i % 4);
	}
	struct rec r = {0};
	sv_buf_init(&r.meta);
	struct sv_nbt mv;
	struct sv_err err;
	if (sv_snbt_parse(meta, strlen(meta), &mv, &err) || sv_nbt_write(&r.meta, &mv))
		die(err.msg);
	sv_nbt_fini(&mv);
	for (int i = 0; i < 16; i++)
		r.world_id[i] = (uint8_t)(seed * 31 + (uint64_t)i * 7);
	if (!compacted && mkdir(out, 0755) && errno != EEXIST)
		die("cannot make the directory");

	struct sv_buf data, seg;
	sv_buf_init(&data);
	sv_buf_init(&seg);
	uint32_t segno = 0, in_seg = 0;
	char path[4096];
	for (uint32_t t0 = 0; t0 < ticks; t0 += per_chunk) {
		uint32_t n = ticks - t0 < per_chunk ? ticks - t0 : per_chunk;
		struct sv_buf pay;
		sv_buf_init(&pay);
		for (uint32_t t = t0; t < t0 + n; t++)
			tick(&g, &pay, t, t == t0);
		size_t cap = ZSTD_compressBound(pay.len);
		uint8_t *z = malloc(cap);
		size_t zn = z ? ZSTD_compress(z, cap, pay.p, pay.len, level) : 0;
		if (!z || ZSTD_isError(zn))
			die("zstd failed");
		struct index_entry e = {t0, n, 0, (uint32_t)zn, (uint32_t)pay.len};
		if (compacted) {
			e.offset = data.len;
			put(&data, z, zn);
		} else {
			e.offset = (uint64_t)segno << 32 | seg.len;
			put(&seg, z, zn);
		}
		add_entry(&r, e);
		r.ticks = t0 + n;
		free(z);
		sv_buf_fini(&pay);
		bool last = t0 + per_chunk >= ticks;
		if (!compacted && (++in_seg == per_seg || last)) {
			/* A commit: the segment, then the preamble by rename. */
			snprintf(path, sizeof path, "%s/segment-%03u.dat", out, segno);
			write_file(path, seg.p, seg.len);
			write_preamble(out, &r);
			if (!quiet && live)
				fprintf(stderr, "mkrecording: committed segment %u (%u chunks, %u ticks)\n",
					segno, r.n, r.ticks);
			if (live && !last)
				usleep(interval * 1000u);
			segno++;
			in_seg = 0;
			seg.len = 0;
		}
	}
	if (compacted) {
		/* Offsets absolute: after the preamble, whose size does not
		 * depend on their values. */
		struct sv_buf head;
		sv_buf_init(&head);
		preamble(&r, &head);
		for (uint32_t i = 0; i < r.n; i++)
			r.idx[i].offset += head.len;
		head.len = 0;
		preamble(&r, &head);
		put(&head, data.p, data.len);
		write_file(out, head.p, head.len);
		sv_buf_fini(&head);
	} else {
		if (leftovers) {
			snprintf(path, sizeof path, "%s/.preamble-leftover.tmp", out);
			write_file(path, "HCRP half written", 17);
			snprintf(path, sizeof path, "%s/segment-%03u.dat", out, segno);
			write_file(path, "a segment no preamble names", 27);
		}
		if (!unfinished) {
			snprintf(path, sizeof path, "%s/finished", out);
			write_file(path, "", 0);
		}
	}
	free(r.idx);
	sv_buf_fini(&r.meta);
	sv_buf_fini(&data);
	sv_buf_fini(&seg);
	return 0;
}
