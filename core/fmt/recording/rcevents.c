/*
 * rcevents.c - a recording chunk's tick records decoded (see rcevents.h).
 *
 * Event bodies (../shared/formats/recording.md; ids are positions in the
 * host's registry):
 *   0 delta_move          VarInt entity; 3 x VarLong zigzag(round(d*4096));
 *                         i16 yaw, i16 pitch (x 360/65536); LP vector
 *   1 absolute_move       VarInt entity; 3 x f64, f32 yaw, f32 pitch; LP vector
 *   2 entity_state        VarInt entity; VarInt pose; u8 flags
 *   3 hand_animation      VarInt entity; VarInt hand
 *   4 item_use            VarInt entity; bool present [VarInt hand]
 *   5 set_item            VarInt entity; VarInt n x (VarInt slot, NBT)
 *   6 held_slot           VarInt entity; VarInt slot
 *   7 set_block           i64 packed x<<38 | (z & 2^26-1)<<12 | (y & 4095); VarInt state
 *   8 spawn_entity        VarInt entity; VarInt type; 3 x f64, f32, f32
 *   9 destroy_entity      VarInt entity
 *  10 run_start           -
 *  11 checkpoint_reached  VarInt length + UTF-8 name; VarLong run time (ms)
 *  12 checkpoint_reset    VarInt reason; VarLong run time
 *  13 run_end             VarInt reason; VarLong run time
 *  14 clear_ghost_blocks  -
 * LP vector: 00 alone is zero; else u8 a, u8 b, u32 c (big-endian), packed
 * = c<<16 | b<<8 | a, scale = a & 3 (| VarInt << 2 when a & 4), and three
 * 15-bit fields at bits 3, 18, 33: (min(f, 32766) * 2 / 32766 - 1) * scale.
 */
#include "rcevents.h"

#include "nbt.h"
#include "rd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- primitives --------------------------------------------------------- */

/* VarInt and VarLong: LEB128 of at most 5 and 10 bytes (rd.h). */
int32_t sv_rc_varint(struct sv_rd *r)
{
	return (int32_t)(uint32_t)sv_rd_leb(r, 5);
}

int64_t sv_rc_varlong(struct sv_rd *r)
{
	return (int64_t)sv_rd_leb(r, 10);
}

/* ---- one event ---------------------------------------------------------- */

enum {
	E_DELTA, E_ABS, E_STATE, E_HAND, E_USE, E_ITEM, E_HELD, E_BLOCK, E_SPAWN,
	E_DESTROY, E_RUN_START, E_CP_REACHED, E_CP_RESET, E_RUN_END, E_CLEAR_GHOSTS,
};

static const char *const ev_names[] = {
	"delta_move", "absolute_move", "entity_state", "hand_animation", "item_use",
	"set_item", "held_slot", "set_block", "spawn_entity", "destroy_entity",
	"run_start", "checkpoint_reached", "checkpoint_reset", "run_end",
	"clear_ghost_blocks",
};

static const char *const reset_reasons[] = {
	"lives", "reset_height", "timer", "manual", "forced", "liquid", "sneak", "turn",
	"sprint", "relog",
};
static const char *const end_reasons[] = {"finish", "reset"};

struct slot {
	int32_t slot;
	struct sv_nbt item;
};

struct event {
	int kind;
	int32_t entity, a, b; /* pose/flags, hand, slot, type, state, reason */
	bool present;
	double x, y, z, vx, vy, vz;
	float yaw, pitch;
	int64_t bx, by, bz, time;
	const uint8_t *str;
	size_t strn;
	struct slot *slots;
	size_t nslots;
};

static void event_fini(struct event *e)
{
	for (size_t i = 0; i < e->nslots; i++)
		sv_nbt_fini(&e->slots[i].item);
	free(e->slots);
	e->slots = NULL;
	e->nslots = 0;
}

/* Reads of an event: a failure's reason is the first one, told the way
 * the rest of the view tells it. */
static const char cut_short[] = "the event is cut short";

/* The read just made is the first to fail: say what failed. */
static void say(struct sv_rd *r, bool was_ok, const char *why)
{
	if (was_ok && !sv_rd_ok(r)) {
		r->ended = false;
		r->why = why;
	}
}

/* The reason of the reader's failure. */
static const char *why_failed(const struct sv_rd *r)
{
	return r->ended || !r->why ? cut_short : r->why;
}

static int32_t vi(struct sv_rd *r)
{
	bool ok = sv_rd_ok(r);
	int32_t v = sv_rc_varint(r);
	say(r, ok, "a VarInt that is malformed or cut short");
	return v;
}

static int64_t vl(struct sv_rd *r)
{
	bool ok = sv_rd_ok(r);
	int64_t v = sv_rc_varlong(r);
	say(r, ok, "a VarLong that is malformed or cut short");
	return v;
}

static void lp_vector(struct sv_rd *r, double *x, double *y, double *z)
{
	*x = *y = *z = 0;
	uint64_t a = sv_rd_be(r, 1);
	if (!sv_rd_ok(r) || !a)
		return;
	uint64_t b = sv_rd_be(r, 1), c = sv_rd_be(r, 4);
	uint64_t packed = c << 16 | b << 8 | a;
	uint64_t scale = a & 3;
	if (a & 4)
		scale |= ((uint64_t)(uint32_t)vi(r)) << 2;
	double s = (double)scale;
	double v[3];
	for (int i = 0; i < 3; i++) {
		uint64_t f = packed >> (3 + 15 * i) & 32767;
		if (f > 32766)
			f = 32766;
		v[i] = ((double)f * 2.0 / 32766.0 - 1.0) * s;
	}
	*x = v[0];
	*y = v[1];
	*z = v[2];
}

static double coord(struct sv_rd *r)
{
	return (double)sv_unzigzag((uint64_t)vl(r)) / 4096.0;
}

static float angle(struct sv_rd *r)
{
	int16_t s = (int16_t)sv_rd_be(r, 2);
	return (float)(s / (65536 / 360.0));
}

/* Reads the body of event `kind`; the reader fails with the reason. */
static void body(struct sv_rd *r, int kind, struct event *e)
{
	e->kind = kind;
	switch (kind) {
	case E_DELTA:
		e->entity = vi(r);
		e->x = coord(r);
		e->y = coord(r);
		e->z = coord(r);
		e->yaw = angle(r);
		e->pitch = angle(r);
		lp_vector(r, &e->vx, &e->vy, &e->vz);
		break;
	case E_ABS:
	case E_SPAWN:
		e->entity = vi(r);
		if (kind == E_SPAWN)
			e->a = vi(r);
		e->x = sv_rd_f64be(r);
		e->y = sv_rd_f64be(r);
		e->z = sv_rd_f64be(r);
		e->yaw = sv_rd_f32be(r);
		e->pitch = sv_rd_f32be(r);
		if (kind == E_ABS)
			lp_vector(r, &e->vx, &e->vy, &e->vz);
		break;
	case E_STATE:
		e->entity = vi(r);
		e->a = vi(r);
		e->b = (int32_t)sv_rd_be(r, 1);
		break;
	case E_HAND:
	case E_HELD:
		e->entity = vi(r);
		e->a = vi(r);
		break;
	case E_USE:
		e->entity = vi(r);
		e->present = sv_rd_be(r, 1) != 0;
		if (e->present)
			e->a = vi(r);
		break;
	case E_ITEM: {
		e->entity = vi(r);
		int32_t n = vi(r);
		if (!sv_rd_ok(r))
			break;
		if (n < 0 || (size_t)n > sv_rd_left(r) / 2) {
			sv_rd_fail(r, "a slot count larger than the bytes left");
			break;
		}
		e->slots = calloc((size_t)n ? (size_t)n : 1, sizeof *e->slots);
		if (!e->slots) {
			sv_rd_fail(r, "out of memory");
			break;
		}
		for (int32_t i = 0; i < n && sv_rd_ok(r); i++) {
			struct slot *s = &e->slots[e->nslots];
			s->slot = vi(r);
			if (!sv_rd_ok(r))
				break;
			size_t used;
			struct sv_err err;
			if (sv_nbt_read(r->p + r->off, sv_rd_left(r), &s->item, &used, &err)) {
				sv_rd_fail(r, "an item's NBT is malformed");
				break;
			}
			e->nslots++;
			sv_rd_bytes(r, used);
		}
		break;
	}
	case E_BLOCK: {
		uint64_t v = sv_rd_be(r, 8);
		e->bx = (int64_t)v >> 38;
		e->by = (int64_t)(v << 52) >> 52;
		e->bz = (int64_t)(v << 26) >> 38;
		e->a = vi(r);
		break;
	}
	case E_DESTROY:
		e->entity = vi(r);
		break;
	case E_CP_REACHED: {
		int32_t n = vi(r);
		if (!sv_rd_ok(r))
			break;
		if (n < 0 || (size_t)n > sv_rd_left(r)) {
			sv_rd_fail(r, "a string longer than the bytes left");
			break;
		}
		e->strn = (size_t)n;
		e->str = sv_rd_bytes(r, e->strn);
		e->time = vl(r);
		break;
	}
	case E_CP_RESET:
	case E_RUN_END:
		e->a = vi(r);
		e->time = vl(r);
		break;
	default:
		break;
	}
}

static int table_size(int table)
{
	return table == SV_RC_BUILTIN ? 10 : 15;
}

/* ---- walking a payload -------------------------------------------------- */

/* The one failure that does not depend on where the bytes end. */
static const char bad_id[] = "an event id the event table does not have";

struct walker {
	struct sv_rd r;
	int table;
	uint32_t tick;   /* the current tick record's */
	int remaining;   /* its events not yet read */
	bool in_tick;
	size_t at;       /* where the record or event being read starts */
	const char *why; /* after a stop: why (the reader is back at `at`) */
};

static void walker_init(struct walker *w, const uint8_t *p, size_t n, int table)
{
	memset(w, 0, sizeof *w);
	sv_rd_init(&w->r, p, n);
	w->table = table;
}

/* Stops at w->at with the reader's reason; the reader reads on from there
 * (what is left is shown raw). */
static int stop(struct walker *w)
{
	w->why = why_failed(&w->r);
	sv_rd_init_at(&w->r, w->r.p, w->r.len, w->at);
	return -1;
}

/* 1: an event in *e (or a new tick: e->kind == -1, tick and count set);
 * 0: the end; -1: stopped (w->why says why, at w->at). */
static int next(struct walker *w, struct event *e, int *count, int32_t *id)
{
	memset(e, 0, sizeof *e);
	struct sv_rd *r = &w->r;
	w->at = r->off;
	if (!w->remaining) {
		if (!sv_rd_left(r))
			return 0;
		int32_t t = vi(r);
		int16_t c = (int16_t)sv_rd_be(r, 2);
		if (sv_rd_ok(r) && (t < 0 || c < 0))
			sv_rd_fail(r, t < 0 ? "a negative tick" : "a negative event count");
		if (!sv_rd_ok(r))
			return stop(w);
		w->tick = (uint32_t)t;
		w->remaining = c;
		*count = c;
		e->kind = -1;
		return 1;
	}
	*id = vi(r);
	if (sv_rd_ok(r) && (*id < 0 || *id >= table_size(w->table)))
		sv_rd_fail(r, bad_id);
	if (sv_rd_ok(r))
		body(r, *id, e);
	if (!sv_rd_ok(r)) {
		event_fini(e);
		return stop(w);
	}
	w->remaining--;
	return 1;
}

/* ---- text --------------------------------------------------------------- */

/* " key=value" appended, the value a shortest decimal (moves are most of a
 * recording: no printf for them). */
static int put_real(struct sv_buf *b, const char *key, double v, bool is_float)
{
	char t[48];
	size_t k = strlen(key);
	memcpy(t, key, k);
	sv_shortest(t + k, v, is_float);
	return sv_buf_add(b, t, strlen(t));
}

static int put_int(struct sv_buf *b, const char *key, int64_t v)
{
	char t[48], d[24];
	size_t k = strlen(key), n = 0;
	memcpy(t, key, k);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		d[n++] = (char)('0' + (int)(u % 10));
	while ((u /= 10));
	if (v < 0)
		t[k++] = '-';
	while (n)
		t[k++] = d[--n];
	return sv_buf_add(b, t, k);
}

static int fields(struct sv_buf *b, const struct event *e)
{
	switch (e->kind) {
	case E_DELTA:
	case E_ABS: {
		bool dl = e->kind == E_DELTA;
		return put_int(b, "entity=", e->entity) || put_real(b, dl ? " dx=" : " x=", e->x, false) ||
		       put_real(b, dl ? " dy=" : " y=", e->y, false) ||
		       put_real(b, dl ? " dz=" : " z=", e->z, false) ||
		       put_real(b, " yaw=", e->yaw, true) || put_real(b, " pitch=", e->pitch, true) ||
		       put_real(b, " vx=", e->vx, false) || put_real(b, " vy=", e->vy, false) ||
		       put_real(b, " vz=", e->vz, false)
			       ? -ENOMEM : 0;
	}
	case E_SPAWN:
		return put_int(b, "entity=", e->entity) || put_int(b, " type=", e->a) ||
		       put_real(b, " x=", e->x, false) || put_real(b, " y=", e->y, false) ||
		       put_real(b, " z=", e->z, false) || put_real(b, " yaw=", e->yaw, true) ||
		       put_real(b, " pitch=", e->pitch, true)
			       ? -ENOMEM : 0;
	case E_STATE:
		return sv_buf_printf(b, "entity=%d pose=%d flags=0x%02x", e->entity, e->a,
				     (unsigned)e->b);
	case E_HAND:
		return sv_buf_printf(b, "entity=%d hand=%d", e->entity, e->a);
	case E_HELD:
		return sv_buf_printf(b, "entity=%d slot=%d", e->entity, e->a);
	case E_USE:
		return e->present ? sv_buf_printf(b, "entity=%d hand=%d", e->entity, e->a)
				  : sv_buf_printf(b, "entity=%d hand=none", e->entity);
	case E_ITEM: {
		int rc = sv_buf_printf(b, "entity=%d slots=%zu", e->entity, e->nslots);
		for (size_t i = 0; i < e->nslots && !rc; i++) {
			rc = sv_buf_printf(b, " slot%d=", e->slots[i].slot);
			if (!rc)
				rc = sv_snbt_write(b, &e->slots[i].item, false);
		}
		return rc;
	}
	case E_BLOCK:
		return sv_buf_printf(b, "x=%lld y=%lld z=%lld state=%d", (long long)e->bx,
				     (long long)e->by, (long long)e->bz, e->a);
	case E_DESTROY:
		return sv_buf_printf(b, "entity=%d", e->entity);
	case E_CP_REACHED: {
		struct sv_nbt s = {.type = SV_NBT_STRING};
		s.v.s.p = (char *)e->str;
		s.v.s.n = e->strn;
		int rc = sv_buf_add(b, "name=", 5);
		if (!rc)
			rc = sv_snbt_write(b, &s, false);
		return rc ? rc : sv_buf_printf(b, " time=%lld", (long long)e->time);
	}
	case E_CP_RESET:
	case E_RUN_END: {
		const char *const *names = e->kind == E_CP_RESET ? reset_reasons : end_reasons;
		int32_t k = e->kind == E_CP_RESET ? 10 : 2;
		if (e->a >= 0 && e->a < k)
			return sv_buf_printf(b, "reason=%s time=%lld", names[e->a], (long long)e->time);
		return sv_buf_printf(b, "reason=%d time=%lld", e->a, (long long)e->time);
	}
	}
	return 0;
}

static int hex_rest(struct sv_buf *b, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	if (sv_buf_reserve(b, 2 * n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		b->p[b->len++] = (uint8_t)digits[p[i] >> 4];
		b->p[b->len++] = (uint8_t)digits[p[i] & 15];
	}
	return 0;
}

/* ---- text as a stream ----------------------------------------------------
 *
 * A chunk's payload may be far larger than what should be held (its text
 * larger still): the text is made from a window of the payload, refilled
 * from `fill` as the walker moves on.  An event is decoded from bytes in
 * the window; one that runs past the window's end while more payload
 * follows is decoded again once the window holds more (the window grows,
 * up to its limit, for an event larger than it).  Whatever cannot be
 * decoded ends the text with one "undecoded" line: the reason, where, and
 * the rest of the payload in hex, streamed too.
 */
enum { TS_EVENTS, TS_HEX, TS_NEWLINE, TS_DONE };

struct sv_rc_ts {
	struct walker w;          /* w.r: the window */
	uint8_t *buf;             /* the window's storage (NULL: memory given) */
	size_t cap, max;          /* its size, and the most it may grow to */
	uint64_t base;            /* payload offset of the window's byte 0 */
	bool eof;                 /* fill has no more */
	int mode;                 /* TS_* */
	int32_t id;               /* the last event id read */
	sv_rc_fill_fn fill;
	void *arg;
	char problem[SV_ERR_MAX];
};

int sv_rc_ts_new(int table, size_t max, sv_rc_fill_fn fill, void *arg, struct sv_rc_ts **out)
{
	struct sv_rc_ts *ts = calloc(1, sizeof *ts);
	if (!ts)
		return -ENOMEM;
	ts->cap = max < (1u << 20) ? max : (1u << 20);
	ts->max = max;
	ts->buf = malloc(ts->cap ? ts->cap : 1);
	if (!ts->buf) {
		free(ts);
		return -ENOMEM;
	}
	walker_init(&ts->w, NULL, 0, table); /* the window is filled on first use */
	ts->fill = fill;
	ts->arg = arg;
	*out = ts;
	return 0;
}

/* A stream over a payload held whole (no copy, nothing to fill). */
static void ts_mem(struct sv_rc_ts *ts, const uint8_t *p, size_t n, int table)
{
	memset(ts, 0, sizeof *ts);
	walker_init(&ts->w, p, n, table);
	ts->eof = true;
	ts->cap = ts->max = n;
}

void sv_rc_ts_free(struct sv_rc_ts *ts)
{
	if (!ts)
		return;
	free(ts->buf);
	free(ts);
}

const char *sv_rc_ts_problem(const struct sv_rc_ts *ts)
{
	return ts->problem;
}

/* Drops what was read from the window and reads more payload after what
 * it holds, growing it first when `grow` (an event longer than it).  0,
 * 1 if it is as large as it may be, or -errno. */
static int ts_refill(struct sv_rc_ts *ts, bool grow, struct sv_err *err)
{
	struct sv_rd *r = &ts->w.r;
	size_t keep = r->len - r->off, n;
	memmove(ts->buf, ts->buf + r->off, keep);
	ts->base += r->off;
	n = keep;
	if (grow || keep == ts->cap) {
		if (ts->cap >= ts->max) {
			sv_rd_init(r, ts->buf, n);
			return 1; /* no more room: what failed in it fails */
		}
		size_t cap = ts->cap * 2 < ts->max ? ts->cap * 2 : ts->max;
		uint8_t *b = realloc(ts->buf, cap);
		if (!b) {
			sv_rd_init(r, ts->buf, n);
			return sv_err_set(err, -ENOMEM, "out of memory");
		}
		ts->buf = b;
		ts->cap = cap;
	}
	int rc = 0;
	while (!rc && n < ts->cap && !ts->eof) {
		size_t got = 0;
		rc = ts->fill(ts->arg, ts->buf + n, ts->cap - n, &got, err);
		n += got;
		ts->eof = !rc && got == 0;
	}
	sv_rd_init(r, ts->buf, n);
	return rc;
}

int sv_rc_ts_next(struct sv_rc_ts *ts, struct sv_buf *out, bool *end, struct sv_err *err)
{
	static const size_t HEX_PIECE = 32768;
	struct walker *w = &ts->w;
	struct sv_rd *r = &w->r;
	*end = false;
	for (;;) {
		if (ts->mode == TS_DONE) {
			*end = true;
			return 0;
		}
		if (ts->mode == TS_NEWLINE) {
			ts->mode = TS_DONE;
			return sv_buf_add(out, "\n", 1) ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
		}
		if (ts->mode == TS_HEX) {
			if (sv_rd_left(r)) {
				size_t k = sv_rd_left(r) < HEX_PIECE ? sv_rd_left(r) : HEX_PIECE;
				if (hex_rest(out, sv_rd_bytes(r, k), k))
					return sv_err_set(err, -ENOMEM, "out of memory");
				return 0;
			}
			if (ts->eof) {
				ts->mode = TS_NEWLINE;
				continue;
			}
			int rc = ts_refill(ts, false, err);
			if (rc)
				return rc;
			continue;
		}
		struct walker saved = *w;
		struct event e;
		int count = 0;
		int k = next(w, &e, &count, &ts->id);
		if (k == 1) {
			int rc;
			if (e.kind == -1) {
				rc = put_int(out, "", w->tick) || put_int(out, "\ttick\t", count) ||
				     sv_buf_add(out, "\n", 1);
			} else {
				const char *name = ev_names[e.kind];
				rc = put_int(out, "", w->tick) || put_int(out, "\t", ts->id) ||
				     sv_buf_add(out, "\t", 1) || sv_buf_add(out, name, strlen(name)) ||
				     sv_buf_add(out, "\t", 1) || fields(out, &e) ||
				     sv_buf_add(out, "\n", 1);
				event_fini(&e);
			}
			return rc ? sv_err_set(err, -ENOMEM, "out of memory") : 0;
		}
		/* The window ended, or the event may not be whole in it: read
		 * on, and decode it again (an unknown id is wrong wherever it
		 * is; an event that fails with the window as large as it may
		 * be is taken as what it says). */
		if (!ts->eof && !(k < 0 && w->why == bad_id)) {
			struct walker failed = *w;
			*w = saved;
			int rc = ts_refill(ts, k < 0 && r->off == 0 && r->len == ts->cap, err);
			if (rc < 0)
				return rc;
			if (rc == 0)
				continue;
			*w = failed;
		}
		if (k == 0) {
			ts->mode = TS_DONE;
			continue;
		}
		uint64_t at = ts->base + w->at;
		snprintf(ts->problem, sizeof ts->problem, "byte %llu: %s", (unsigned long long)at,
			 w->why);
		if (sv_buf_printf(out, "%u\t%d\tundecoded\treason=\"%s\" at=%llu bytes=", w->tick,
				  ts->id, w->why, (unsigned long long)at))
			return sv_err_set(err, -ENOMEM, "out of memory");
		ts->mode = TS_HEX;
		return 0;
	}
}

int sv_rc_text(const uint8_t *p, size_t n, int table, struct sv_buf *out, char *problem)
{
	struct sv_rc_ts ts;
	ts_mem(&ts, p, n, table);
	struct sv_err err;
	bool end = false;
	int rc = 0;
	while (!rc && !end)
		rc = sv_rc_ts_next(&ts, out, &end, &err);
	if (problem)
		snprintf(problem, SV_ERR_MAX, "%s", ts.problem);
	return rc ? -ENOMEM : 0;
}

int sv_rc_renumber(const uint8_t *p, size_t n, int table, uint32_t shift, struct sv_buf *out,
		   struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	while (sv_rd_left(&r)) {
		size_t at = r.off;
		int32_t t = vi(&r);
		int16_t count = (int16_t)sv_rd_be(&r, 2);
		if (!sv_rd_ok(&r))
			return sv_err_set(err, -EBADMSG, "byte %zu: %s", at, why_failed(&r));
		if (t < 0 || count < 0 || (uint32_t)t < shift)
			return sv_err_set(err, -EBADMSG, "byte %zu: tick %d cannot be renumbered",
					  at, t);
		uint8_t c2[2];
		sv_put_be(c2, (uint16_t)count, 2);
		if (sv_put_leb(out, (uint32_t)(t - (int32_t)shift)) || sv_buf_add(out, c2, 2))
			return sv_err_set(err, -ENOMEM, "out of memory");
		size_t start = r.off;
		for (int16_t i = 0; i < count; i++) {
			size_t ev = r.off;
			int32_t id = vi(&r);
			if (sv_rd_ok(&r) && (id < 0 || id >= table_size(table)))
				sv_rd_fail(&r, bad_id);
			struct event e;
			memset(&e, 0, sizeof e);
			if (sv_rd_ok(&r))
				body(&r, id, &e);
			event_fini(&e);
			if (!sv_rd_ok(&r))
				return sv_err_set(err, -EBADMSG, "byte %zu: %s", ev, why_failed(&r));
		}
		if (sv_buf_add(out, p + start, r.off - start))
			return sv_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

int sv_rc_first_tick(const uint8_t *p, size_t n, uint32_t *tick, struct sv_err *err)
{
	struct sv_rd r;
	sv_rd_init(&r, p, n);
	int32_t t = sv_rc_varint(&r);
	if (!sv_rd_ok(&r) || t < 0)
		return sv_err_set(err, -EBADMSG, "byte 0: no tick record");
	*tick = (uint32_t)t;
	return 0;
}

/* ---- state -------------------------------------------------------------- */

struct ent {
	int32_t id, type;
	bool known_type, using_present;
	double x, y, z;
	float yaw, pitch;
	int32_t pose, flags, held, use_hand;
	bool has_held;
	struct slot *slots; /* sorted by slot */
	size_t nslots;
};

struct ghost {
	int64_t x, y, z;
	int32_t state;
};

struct runev {
	bool seen;
	uint32_t tick;
	struct event e;
	char *name;
};

struct state {
	struct ent *ents;
	size_t nents, cap;
	struct ghost *ghosts;
	size_t nghosts, gcap;
	struct runev run[4]; /* start, checkpoint_reached, checkpoint_reset, end */
};

static void ent_clear_slots(struct ent *x)
{
	for (size_t i = 0; i < x->nslots; i++)
		sv_nbt_fini(&x->slots[i].item);
	free(x->slots);
	x->slots = NULL;
	x->nslots = 0;
}

static void state_fini(struct state *s)
{
	for (size_t i = 0; i < s->nents; i++)
		ent_clear_slots(&s->ents[i]);
	free(s->ents);
	free(s->ghosts);
	for (int i = 0; i < 4; i++)
		free(s->run[i].name);
}

static struct ent *entity(struct state *s, int32_t id, bool make)
{
	for (size_t i = 0; i < s->nents; i++)
		if (s->ents[i].id == id)
			return &s->ents[i];
	if (!make)
		return NULL;
	if (s->nents == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 8;
		struct ent *v = realloc(s->ents, c * sizeof *v);
		if (!v)
			return NULL;
		s->ents = v;
		s->cap = c;
	}
	struct ent *x = &s->ents[s->nents++];
	memset(x, 0, sizeof *x);
	x->id = id;
	return x;
}

/* Takes the event's slots (moves the NBT). */
static int set_slots(struct ent *x, struct event *e)
{
	for (size_t i = 0; i < e->nslots; i++) {
		struct slot *in = &e->slots[i];
		size_t k = 0;
		while (k < x->nslots && x->slots[k].slot < in->slot)
			k++;
		if (k < x->nslots && x->slots[k].slot == in->slot) {
			sv_nbt_fini(&x->slots[k].item);
		} else {
			struct slot *v = realloc(x->slots, (x->nslots + 1) * sizeof *v);
			if (!v)
				return -ENOMEM;
			x->slots = v;
			memmove(&v[k + 1], &v[k], (x->nslots - k) * sizeof *v);
			x->nslots++;
		}
		x->slots[k].slot = in->slot;
		x->slots[k].item = in->item;
		memset(&in->item, 0, sizeof in->item);
	}
	return 0;
}

static int apply(struct state *s, struct event *e, uint32_t tick)
{
	struct ent *x = NULL;
	switch (e->kind) {
	case E_DELTA:
	case E_ABS:
	case E_STATE:
	case E_USE:
	case E_ITEM:
	case E_HELD:
	case E_SPAWN:
		x = entity(s, e->entity, true);
		if (!x)
			return -ENOMEM;
		break;
	}
	switch (e->kind) {
	case E_SPAWN:
		x->type = e->a;
		x->known_type = true;
		/* fall through */
	case E_ABS:
		x->x = e->x;
		x->y = e->y;
		x->z = e->z;
		x->yaw = e->yaw;
		x->pitch = e->pitch;
		break;
	case E_DELTA:
		x->x += e->x;
		x->y += e->y;
		x->z += e->z;
		x->yaw = e->yaw;
		x->pitch = e->pitch;
		break;
	case E_STATE:
		x->pose = e->a;
		x->flags = e->b;
		break;
	case E_USE:
		x->using_present = e->present;
		x->use_hand = e->a;
		break;
	case E_ITEM:
		return set_slots(x, e);
	case E_HELD:
		x->held = e->a;
		x->has_held = true;
		break;
	case E_DESTROY:
		for (size_t i = 0; i < s->nents; i++)
			if (s->ents[i].id == e->entity) {
				ent_clear_slots(&s->ents[i]);
				s->ents[i] = s->ents[--s->nents];
				break;
			}
		break;
	case E_BLOCK: {
		for (size_t i = 0; i < s->nghosts; i++)
			if (s->ghosts[i].x == e->bx && s->ghosts[i].y == e->by && s->ghosts[i].z == e->bz) {
				s->ghosts[i].state = e->a;
				return 0;
			}
		if (s->nghosts == s->gcap) {
			size_t c = s->gcap ? s->gcap * 2 : 8;
			struct ghost *v = realloc(s->ghosts, c * sizeof *v);
			if (!v)
				return -ENOMEM;
			s->ghosts = v;
			s->gcap = c;
		}
		s->ghosts[s->nghosts++] = (struct ghost){e->bx, e->by, e->bz, e->a};
		break;
	}
	case E_CLEAR_GHOSTS:
		s->nghosts = 0;
		break;
	case E_RUN_START:
	case E_CP_REACHED:
	case E_CP_RESET:
	case E_RUN_END: {
		struct runev *r = &s->run[e->kind - E_RUN_START];
		free(r->name);
		r->name = NULL;
		r->seen = true;
		r->tick = tick;
		r->e = *e;
		r->e.slots = NULL;
		r->e.str = NULL;
		if (e->kind == E_CP_REACHED) {
			r->name = malloc(e->strn + 1);
			if (!r->name)
				return -ENOMEM;
			memcpy(r->name, e->str, e->strn);
			r->name[e->strn] = '\0';
			r->e.strn = e->strn;
		}
		break;
	}
	}
	return 0;
}

static int cmp_ent(const void *a, const void *b)
{
	int32_t x = ((const struct ent *)a)->id, y = ((const struct ent *)b)->id;
	return (x > y) - (x < y);
}

static int cmp_ghost(const void *a, const void *b)
{
	const struct ghost *x = a, *y = b;
	if (x->x != y->x)
		return (x->x > y->x) - (x->x < y->x);
	if (x->y != y->y)
		return (x->y > y->y) - (x->y < y->y);
	return (x->z > y->z) - (x->z < y->z);
}

/* A JSON string of UTF-8 bytes (control characters escaped). */
static int json_str(struct sv_buf *b, const char *s, size_t n)
{
	int rc = sv_buf_add(b, "\"", 1);
	for (size_t i = 0; i < n && !rc; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			rc = sv_buf_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			rc = sv_buf_printf(b, "\\u%04x", c);
		else
			rc = sv_buf_add(b, &s[i], 1);
	}
	return rc ? rc : sv_buf_add(b, "\"", 1);
}

static int json_num(struct sv_buf *b, double d, bool is_float)
{
	char t[40];
	if (!isfinite(d))
		return sv_buf_add(b, "null", 4);
	sv_shortest(t, d, is_float);
	return sv_buf_add(b, t, strlen(t));
}

#define LIT(b, s) sv_buf_add(b, s, sizeof s - 1)

static int state_json(struct state *s, uint32_t tick, struct sv_buf *b)
{
	int rc = sv_buf_printf(b, "{\n  \"tick\": %u,\n  \"entities\": {", tick);
	if (s->nents > 1)
		qsort(s->ents, s->nents, sizeof *s->ents, cmp_ent);
	for (size_t i = 0; i < s->nents && !rc; i++) {
		struct ent *x = &s->ents[i];
		rc = sv_buf_printf(b, "%s\n    \"%d\": {\n      \"type\": ", i ? "," : "", x->id);
		if (!rc)
			rc = x->known_type ? sv_buf_printf(b, "%d", x->type) : LIT(b, "null");
		if (!rc)
			rc = LIT(b, ",\n      \"position\": [");
		if (!rc)
			rc = json_num(b, x->x, false);
		if (!rc)
			rc = LIT(b, ", ");
		if (!rc)
			rc = json_num(b, x->y, false);
		if (!rc)
			rc = LIT(b, ", ");
		if (!rc)
			rc = json_num(b, x->z, false);
		if (!rc)
			rc = LIT(b, "],\n      \"yaw\": ");
		if (!rc)
			rc = json_num(b, x->yaw, true);
		if (!rc)
			rc = LIT(b, ",\n      \"pitch\": ");
		if (!rc)
			rc = json_num(b, x->pitch, true);
		if (!rc)
			rc = sv_buf_printf(b, ",\n      \"pose\": %d,\n      \"flags\": %d,\n"
					   "      \"slots\": {", x->pose, x->flags);
		for (size_t k = 0; k < x->nslots && !rc; k++) {
			struct sv_buf t;
			sv_buf_init(&t);
			rc = sv_snbt_write(&t, &x->slots[k].item, false);
			if (!rc)
				rc = sv_buf_printf(b, "%s\n        \"%d\": ", k ? "," : "",
						   x->slots[k].slot);
			if (!rc)
				rc = json_str(b, (const char *)t.p, t.len);
			sv_buf_fini(&t);
		}
		if (!rc)
			rc = x->nslots ? LIT(b, "\n      },\n      \"held\": ")
				       : LIT(b, "},\n      \"held\": ");
		if (!rc)
			rc = x->has_held ? sv_buf_printf(b, "%d", x->held) : LIT(b, "null");
		if (!rc)
			rc = LIT(b, ",\n      \"using\": ");
		if (!rc)
			rc = x->using_present ? sv_buf_printf(b, "%d", x->use_hand)
					      : LIT(b, "null");
		if (!rc)
			rc = LIT(b, "\n    }");
	}
	if (!rc)
		rc = s->nents ? LIT(b, "\n  },\n  \"ghost_blocks\": {")
			      : LIT(b, "},\n  \"ghost_blocks\": {");
	if (s->nghosts > 1)
		qsort(s->ghosts, s->nghosts, sizeof *s->ghosts, cmp_ghost);
	for (size_t i = 0; i < s->nghosts && !rc; i++)
		rc = sv_buf_printf(b, "%s\n    \"%lld,%lld,%lld\": %d", i ? "," : "",
				   (long long)s->ghosts[i].x, (long long)s->ghosts[i].y,
				   (long long)s->ghosts[i].z, s->ghosts[i].state);
	if (!rc)
		rc = s->nghosts ? LIT(b, "\n  },\n  \"run\": {") : LIT(b, "},\n  \"run\": {");
	static const char *const keys[4] = {"start", "checkpoint_reached", "checkpoint_reset", "end"};
	bool first = true;
	for (int i = 0; i < 4 && !rc; i++) {
		struct runev *r = &s->run[i];
		if (!r->seen)
			continue;
		rc = sv_buf_printf(b, "%s\n    \"%s\": {\"tick\": %u", first ? "" : ",", keys[i], r->tick);
		first = false;
		if (!rc && i == 1) {
			rc = LIT(b, ", \"name\": ");
			if (!rc)
				rc = json_str(b, r->name, r->e.strn);
		}
		if (!rc && i >= 2) {
			const char *const *names = i == 2 ? reset_reasons : end_reasons;
			int32_t k = i == 2 ? 10 : 2;
			rc = r->e.a >= 0 && r->e.a < k ? sv_buf_printf(b, ", \"reason\": \"%s\"", names[r->e.a])
						       : sv_buf_printf(b, ", \"reason\": %d", r->e.a);
		}
		if (!rc && i >= 1)
			rc = sv_buf_printf(b, ", \"time\": %lld", (long long)r->e.time);
		if (!rc)
			rc = LIT(b, "}");
	}
	if (!rc)
		rc = first ? LIT(b, "}\n}\n") : LIT(b, "\n  }\n}\n");
	return rc ? -ENOMEM : 0;
}

int sv_rc_state(const uint8_t *p, size_t n, int table, uint32_t tick, struct sv_buf *out,
		struct sv_err *err)
{
	struct walker w;
	walker_init(&w, p, n, table);
	struct state s;
	memset(&s, 0, sizeof s);
	struct event e;
	int count, k, rc = 0;
	int32_t id;
	bool found = false;
	while ((k = next(&w, &e, &count, &id)) == 1) {
		if (e.kind == -1) {
			if (found && w.tick != tick)
				break; /* past the tick asked for */
			if (w.tick > tick)
				break;
			found = w.tick == tick;
			continue;
		}
		rc = apply(&s, &e, w.tick);
		event_fini(&e);
		if (rc) {
			rc = sv_err_set(err, -ENOMEM, "out of memory");
			break;
		}
	}
	if (!rc && k < 0 && (!found || w.tick == tick))
		rc = sv_err_set(err, -EBADMSG, "byte %zu: %s", w.at, w.why);
	if (!rc && !found)
		rc = sv_err_set(err, -ENOENT, "no tick %u in this chunk", tick);
	if (!rc)
		rc = state_json(&s, tick, out);
	state_fini(&s);
	return rc;
}
