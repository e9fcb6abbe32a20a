/*
 * test_sbworld.c - the Starbound record views (core/fmt/starbound/sbworld.c): floats
 * as the shortest decimal that reads back; a sector of every version
 * through .tsv and back, field for field (the byte the game ignores below
 * 418 kept); the text grid's edits and its wide cells; every refusal with
 * its exact message; entity sectors, metadata and lone values with and
 * without OpenStarbound's trailers, written back byte for byte; the unique
 * index's records; entity positions.
 */
#include "fmt/starbound/sbon.h"
#include "fmt/starbound/sbworld.h"
#include "t.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void floats(void)
{
	static const struct { float f; const char *s; } cases[] = {
		{0.0f, "0"}, {-0.0f, "-0"}, {20.0f, "20"}, {10000.0f, "10000"},
		{100000.0f, "100000"}, {0.1f, "0.1"}, {1e-7f, "1e-07"}, {123456.7f, "123456.7"},
		{3.4e38f, "3.4e+38"}, {0.33333334f, "0.33333334"},
	};
	char buf[32];
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		sv_sb_float(cases[i].f, buf, sizeof buf);
		T_STR(cases[i].s, buf);
	}
	/* Random bit patterns: each reads back to itself. */
	int bad = 0;
	for (int i = 0; i < 20000; i++) {
		uint32_t u = rnd() << 16 ^ rnd();
		float f;
		memcpy(&f, &u, sizeof f);
		if (isnan(f))
			continue;
		sv_sb_float(f, buf, sizeof buf);
		float g = strtof(buf, NULL);
		bad += memcmp(&f, &g, sizeof f) != 0;
	}
	T_INT(0, bad);
}

static void random_sector(struct sv_sb_sector *s, unsigned version)
{
	memset(s, 0, sizeof *s);
	s->version = version;
	s->generation = rnd() % 6;
	for (int i = 0; i < SV_SB_TILES; i++) {
		struct sv_sb_tile *t = &s->t[i];
		t->fg = (struct sv_sb_side){(uint16_t)rnd(), (uint16_t)rnd(), (uint8_t)rnd(),
					    (uint8_t)rnd(), (uint8_t)rnd()};
		t->bg = (struct sv_sb_side){(uint16_t)(rnd() % 20), 65535, 0, (uint8_t)rnd(), 0};
		t->liquid = (uint8_t)rnd();
		t->level = (float)(rnd() % 100000) / 997.0f;
		t->pressure = rnd() % 2 ? 0 : (float)rnd() * 1.5f;
		t->source = rnd() % 2;
		t->collision = (uint8_t)(rnd() % 6);
		t->dungeon = (uint16_t)rnd();
		t->biome = (uint8_t)rnd();
		t->env_biome = (uint8_t)rnd();
		t->transition = version >= 417 && rnd() % 2;
		if (version < 418)
			t->ignored = (uint8_t)rnd();
		else if (rnd() % 50 == 0) {
			t->has_root = true;
			t->root_x = (int32_t)(rnd() << 8);
			t->root_y = -(int32_t)(rnd() % 1000);
		}
	}
}

/* A sector written to .tsv parses back, over the stored one, to the same
 * bytes. */
static void tsv_round_trip(unsigned version)
{
	struct sv_sb_sector *a = malloc(sizeof *a), *b = malloc(sizeof *b);
	random_sector(a, version);
	struct sv_buf text, x, y;
	struct sv_err e;
	sv_buf_init(&text);
	sv_buf_init(&x);
	sv_buf_init(&y);
	T_INT(0, sv_sb_tsv(a, 7, 65535, &text));
	T_INT(0, sv_sb_tsv_parse(text.p, text.len, 7, 65535, a, b, &e));
	T_INT(0, sv_sb_sector_write(a, &x, &e));
	T_INT(0, sv_sb_sector_write(b, &y, &e));
	T_UINT(x.len, y.len);
	if (x.len == y.len)
		T_MEM(x.p, y.p, x.len);
	/* Without a stored sector (a new one), the same but the byte the game
	 * ignores below 418, which is 0. */
	T_INT(0, sv_sb_tsv_parse(text.p, text.len, 7, 65535, NULL, b, &e));
	T_UINT(version, b->version);
	T_UINT(a->t[5].fg.material, b->t[5].fg.material);
	T_UINT(0, b->t[5].ignored);
	sv_buf_fini(&text);
	sv_buf_fini(&x);
	sv_buf_fini(&y);
	free(a);
	free(b);
}

/* The .tsv of s with line `line` (1-based) replaced by `with`, parsed:
 * the message. */
static const char *tsv_refused(const struct sv_sb_sector *s, int line, const char *with,
			       struct sv_err *e)
{
	struct sv_buf text, edited;
	sv_buf_init(&text);
	sv_buf_init(&edited);
	sv_sb_tsv(s, 0, 0, &text);
	const char *p = (const char *)text.p, *end = p + text.len;
	for (int n = 1; p < end; n++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)(nl - p) + 1;
		if (n == line)
			sv_buf_printf(&edited, "%s\n", with);
		else
			sv_buf_add(&edited, p, len);
		p += len;
	}
	struct sv_sb_sector *out = malloc(sizeof *out);
	sv_err_clear(e);
	int rc = sv_sb_tsv_parse(edited.p, edited.len, 0, 0, s, out, e);
	T_INT(-EINVAL, rc);
	free(out);
	sv_buf_fini(&text);
	sv_buf_fini(&edited);
	return e->msg;
}

static void tsv_refusals(void)
{
	struct sv_sb_sector *s = malloc(sizeof *s);
	random_sector(s, 416);
	struct sv_err e;
	T_STR("line 3: collision must be 0 (null) to 5 (block)",
	      tsv_refused(s, 3, "0\t0\t1\t0\t0\t65535\t0\t1\t0\t0\t65535\t0\t0\t0\t0\t0\t9\t0\t0\t0\t-\t-", &e));
	T_STR("line 3: fg must be a whole number from 0 to 65535",
	      tsv_refused(s, 3, "0\t0\t65536\t0\t0\t65535\t0\t1\t0\t0\t65535\t0\t0\t0\t0\t0\t1\t0\t0\t0\t-\t-", &e));
	T_STR("line 3: a root needs a sector of version 418",
	      tsv_refused(s, 3, "0\t0\t1\t0\t0\t65535\t0\t1\t0\t0\t65535\t0\t0\t0\t0\t0\t1\t0\t0\t0\t-\t3,4", &e));
	T_STR("line 3: transition must be - (the sector's version has none)",
	      tsv_refused(s, 3, "0\t0\t1\t0\t0\t65535\t0\t1\t0\t0\t65535\t0\t0\t0\t0\t0\t1\t0\t0\t0\t1\t-", &e));
	T_STR("line 3: level must be a number",
	      tsv_refused(s, 3, "0\t0\t1\t0\t0\t65535\t0\t1\t0\t0\t65535\t0\t0\tdeep\t0\t0\t1\t0\t0\t0\t-\t-", &e));
	T_STR("line 4: tile 5,0 where 1,0 belongs (rows stay in stored order)",
	      tsv_refused(s, 4, "5\t0\t1\t0\t0\t65535\t0\t1\t0\t0\t65535\t0\t0\t0\t0\t0\t1\t0\t0\t0\t-\t-", &e));
	T_STR("line 2: the version cannot change (savefs writes a sector at the version it was read)",
	      tsv_refused(s, 2, "# version 418 generation 0", &e));
	T_STR("line 3: more than 22 fields",
	      tsv_refused(s, 3, "0\t0\t1\t0\t0\t65535\t0\t1\t0\t0\t65535\t0\t0\t0\t0\t0\t1\t0\t0\t0\t-\t-\t7", &e));
	T_STR("1023 tiles, not 1024", tsv_refused(s, 1026, "# gone", &e));
	free(s);
}

static void txt(void)
{
	struct sv_sb_sector *s = malloc(sizeof *s), *b = malloc(sizeof *b);
	random_sector(s, 418);
	for (int i = 0; i < SV_SB_TILES; i++) {
		s->t[i].fg.material = i % 3 ? 7 : 65535;
		s->t[i].bg.material = (uint16_t)(i % 5);
	}
	struct sv_buf t;
	struct sv_err e;
	sv_buf_init(&t);
	T_INT(0, sv_sb_txt(s, 1, 2, &t));
	char *text = strndup((const char *)t.p, t.len);
	T_HAS(text, "# . = 65535\n# 0 = 0\n# 1 = 1\n# 2 = 2\n# 3 = 3\n# 4 = 4\n# 5 = 7\n");
	/* The top row (y = 31) first: tile 992 is x 0 of it. */
	T_HAS(text, "# foreground\n5.55.55.55.55.55.55.55.55.55.55.\n");
	/* Unchanged, it applies as the same sector. */
	T_INT(0, sv_sb_txt_parse(t.p, t.len, s, b, &e));
	T_OK(!memcmp(s, b, sizeof *s));
	/* A cell edited to a new legend entry. */
	char *at = strstr(text, "# foreground\n") + strlen("# foreground\n");
	at[0] = 'Z';
	char *edited = NULL;
	if (asprintf(&edited, "# Z = 4242\n%s", text) < 0)
		abort();
	T_INT(0, sv_sb_txt_parse((const uint8_t *)edited, strlen(edited), s, b, &e));
	T_UINT(4242, b->t[992].fg.material);
	T_UINT(s->t[992].fg.mod, b->t[992].fg.mod);
	at[0] = 'Q';
	T_INT(-EINVAL, sv_sb_txt_parse((const uint8_t *)text, strlen(text), s, b, &e));
	T_HAS(e.msg, ": column 1: 'Q' is not in the legend");
	T_INT(-EINVAL, sv_sb_txt_parse((const uint8_t *)"# only\n", 7, s, b, &e));
	T_STR("0 rows, not 64 (32 foreground, 32 background)", e.msg);
	free(edited);
	free(text);
	/* More materials than characters: wide cells. */
	for (int i = 0; i < SV_SB_TILES; i++)
		s->t[i].fg.material = (uint16_t)(i % 200);
	t.len = 0;
	T_INT(0, sv_sb_txt(s, 1, 2, &t));
	text = strndup((const char *)t.p, t.len);
	T_HAS(text, "# foreground\n00c0 00c1 00c2");
	T_INT(0, sv_sb_txt_parse(t.p, t.len, s, b, &e));
	T_OK(!memcmp(s, b, sizeof *s));
	free(text);
	sv_buf_fini(&t);
	free(s);
	free(b);
}

/* JSON text -> writer -> reader -> the same JSON; bytes -> reader -> writer
 * -> the same bytes. */
static void json_records(void)
{
	struct sv_err e;
	struct sv_buf b, b2;
	sv_buf_init(&b);
	sv_buf_init(&b2);
	const char *ents = "[{\"id\": \"ObjectEntity\", \"version\": 3, \"content\": {\"tilePosition\": "
			   "[5, 6], \"uniqueId\": \"u1\", \"scale\": 1.5}, \"subversions\": {\"a\": 1}}, "
			   "{\"id\": \"StagehandEntity\", \"content\": {\"position\": [1.25, 2.0]}, "
			   "\"subversions\": {}}]";
	json_t *j = json_loads(ents, 0, NULL), *back = NULL;
	T_INT(0, sv_sb_entities_write(j, &b, &e));
	T_INT(0, sv_sb_entities_read(b.p, b.len, &back, &e));
	T_OK(json_equal(j, back));
	T_INT(0, sv_sb_entities_write(back, &b2, &e));
	T_UINT(b.len, b2.len);
	if (b.len == b2.len)
		T_MEM(b.p, b2.p, b.len);
	float pos[2];
	T_OK(sv_sb_entity_position(json_object_get(json_array_get(j, 0), "content"), pos));
	T_OK(pos[0] == 5 && pos[1] == 6);
	T_OK(sv_sb_entity_position(json_object_get(json_array_get(j, 1), "content"), pos));
	T_OK(pos[0] == 1.25f && pos[1] == 2.0f);
	json_decref(j);
	json_decref(back);
	/* A stray field is refused with its name. */
	j = json_loads("[{\"id\": \"X\", \"content\": 1, \"colour\": 2}]", 0, NULL);
	b.len = 0;
	T_INT(-EINVAL, sv_sb_entities_write(j, &b, &e));
	T_STR("entity 0: \"colour\" is not a field of a versioned value (id, version, content, "
	      "subversions)", e.msg);
	json_decref(j);
	/* Metadata: width and height, and nothing written without them. */
	j = json_loads("{\"width\": 3000, \"height\": 2000, \"id\": \"WorldMetadata\", \"version\": 20, "
		       "\"content\": {\"g\": 80.5}}", 0, NULL);
	b.len = 0;
	T_INT(0, sv_sb_metadata_write(j, &b, &e));
	T_INT(0, sv_sb_metadata_read(b.p, b.len, &back, &e));
	T_OK(json_equal(j, back));
	json_object_del(j, "height");
	T_INT(-EINVAL, sv_sb_metadata_write(j, &b, &e));
	T_STR("world metadata needs \"width\" and \"height\" (whole numbers from 0 to 4294967295)",
	      e.msg);
	json_decref(j);
	json_decref(back);
	/* A trailer that is not sub-versioning 1. */
	b.len = 0;
	j = json_loads("{\"id\": \"P\", \"content\": null}", 0, NULL);
	sv_sb_vdoc_write(j, &b, &e);
	sv_buf_add(&b, "\0\0\0\2", 4);
	T_INT(-EBADMSG, sv_sb_vdoc_read(b.p, b.len, &back, &e));
	T_STR("byte 4: a trailer that is not sub-versioning 1", e.msg);
	json_decref(j);
	/* The unique index. */
	j = json_loads("{\"chest\": {\"sector\": [3, 4], \"position\": [100.5, 130.0]}}", 0, NULL);
	b.len = 0;
	T_INT(0, sv_sb_ubucket_write(j, &b, &e));
	T_UINT(1 + 1 + 5 + 12, b.len);
	T_INT(0, sv_sb_ubucket_read(b.p, b.len, &back, &e));
	T_OK(json_equal(j, back));
	json_decref(j);
	json_decref(back);
	j = json_loads("[\"a\", \"bc\"]", 0, NULL);
	b.len = 0;
	T_INT(0, sv_sb_usector_write(j, &b, &e));
	T_MEM("\x02\x01" "a\x02" "bc", b.p, 6);
	T_INT(0, sv_sb_usector_read(b.p, b.len, &back, &e));
	T_OK(json_equal(j, back));
	json_decref(j);
	json_decref(back);
	sv_buf_fini(&b);
	sv_buf_fini(&b2);
}

int main(void)
{
	floats();
	tsv_round_trip(416);
	tsv_round_trip(417);
	tsv_round_trip(418);
	tsv_refusals();
	txt();
	json_records();
	return t_done();
}
