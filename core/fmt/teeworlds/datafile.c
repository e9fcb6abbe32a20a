/*
 * datafile.c - Teeworlds/DDNet map datafiles (.map), versions 3 and 4.
 *
 * Layout (all integers little-endian int32, also under the "ATAD" magic):
 *
 *   off  field
 *   0    magic "DATA" | "ATAD"
 *   4    version (3 | 4)
 *   8    size     = file size - 16   (old writers: 4 * num_data less)
 *   12   swaplen  = size - data_size (short by the same amount)
 *   16   num_item_types, num_items, num_data, item_size, data_size
 *   36   item_types[num_item_types]   {type_id, start, num}
 *        item_offsets[num_items]      relative to the items section
 *        data_offsets[num_data]       relative to the data section
 *        data_sizes[num_data]         version 4: uncompressed sizes
 *        items section (item_size)    {type<<16 | id, size, size/4 ints}
 *        data section (data_size)     v4: one zlib stream per item; v3: raw
 *
 * A stored length comes from the next offset (the last from the section
 * size).  Ids are unique within a type except 0xFFFF (UUID index), where
 * real maps repeat them.  Types 0x8000..0xFFFE are extended types named by
 * the UUID in the 0xFFFF item whose id is the type number.
 *
 * Tree:  header.json, items/<type>/<id>.bin (payload only), data/<n>.bin
 * (inflated on demand; its size comes from the v4 size table or the
 * stored length in v3, so stat never inflates).
 *
 * Invariants: open() reads only the header, index and items section (the
 * items are the index of a map; data is read on demand).  Every offset is
 * checked against the file before use.  A problem in the header or the
 * item index fails the open; a problem with one data item marks that node
 * SV_N_BAD (reads fail with EIO) and is reported as a warning.
 */
#include "datafile_priv.h"
#include "twmap.h"

#include "rd.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zlib.h>

static const struct {
	const char *name;
	uint8_t uuid[16];
} known_uuids[] = {
	{"mapitemtype-test@ddnet.tw",
	 {0xb1, 0xab, 0x21, 0x86, 0x5a, 0xc3, 0x39, 0xd9, 0x9f, 0xbc, 0x47, 0xcf, 0x03, 0xef, 0xdf, 0x1e}},
	{"mapitemtype-automapper-config@ddnet.tw",
	 {0x3e, 0x1b, 0x27, 0x16, 0x17, 0x8c, 0x39, 0x78, 0x9b, 0xd9, 0xb1, 0x1a, 0xe0, 0x41, 0x0d, 0xd8}},
	{"mapitemtype-envpoints-bezier@ddnet.tw",
	 {0x3a, 0xb4, 0xf8, 0x4d, 0xd9, 0xcc, 0x3c, 0x78, 0xb5, 0x85, 0x0d, 0x6c, 0xcd, 0xb2, 0xe2, 0x5c}},
	{"mapitemtype-group@ddnet.tw", /* retired, still found in maps */
	 {0x4a, 0x26, 0xca, 0x1f, 0x64, 0xbd, 0x30, 0xe3, 0x90, 0x7a, 0x70, 0x7e, 0xac, 0xd1, 0xf0, 0x80}},
};

static const char *const map_types[] = {
	"version", "info", "image", "envelope", "group", "layer", "envpoints", "sound",
};

static int probe_df(const uint8_t *h, size_t n)
{
	return n >= 8 && (!memcmp(h, "DATA", 4) || !memcmp(h, "ATAD", 4));
}

static void free_df(struct df *d)
{
	if (!d)
		return;
	free(d->items_sec);
	free(d->items);
	free(d->item_node);
	free(d->data_node);
	sv_twm_free(d->map);
	if (d->data)
		for (int32_t i = 0; i < d->num_data; i++)
			free(d->data[i].bad);
	free(d->data);
	free(d->types);
	json_decref(d->raw_types);
	free(d->header);
	free(d);
}

static void close_df(struct sv_container *c)
{
	free_df(sv_container_priv(c));
	sv_container_set_priv(c, NULL);
}

static void uuid_str(const uint8_t *u, char *out)
{
	sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		u[12], u[13], u[14], u[15]);
}

/* ---- reading ----------------------------------------------------------- */

/* "datafile: byte N: what": the byte is where the offending field is. */
static int bad_header(struct sv_err *err, int code, uint64_t off, const char *what)
{
	return sv_err_set(err, code, "datafile: byte %llu: %s", (unsigned long long)off,
			  what);
}

/* Reads and checks the 36-byte header; fills d. */
static int read_header(struct sv_container *c, struct df *d, struct sv_err *err)
{
	uint64_t fsize = sv_container_size(c);
	uint8_t h[HDR];
	char what[200];
	if (fsize < HDR) {
		snprintf(what, sizeof what,
			 "truncated header: the file ends here, a header is %d bytes", HDR);
		return bad_header(err, -EBADMSG, fsize, what);
	}
	int rc = sv_container_pread(c, 0, h, HDR, err);
	if (rc)
		return rc;
	struct sv_rd r;
	sv_rd_init(&r, h, HDR);
	memcpy(d->magic, sv_rd_bytes(&r, 4), 4);
	d->magic[4] = '\0';
	if (memcmp(d->magic, "DATA", 4) && memcmp(d->magic, "ATAD", 4))
		return bad_header(err, -EBADMSG, 0, "bad magic (not DATA or ATAD)");
	d->version = sv_rd_i32le(&r);
	d->size = sv_rd_i32le(&r);
	d->swaplen = sv_rd_i32le(&r);
	d->num_types = sv_rd_i32le(&r);
	d->num_items = sv_rd_i32le(&r);
	d->num_data = sv_rd_i32le(&r);
	d->item_size = sv_rd_i32le(&r);
	d->data_size = sv_rd_i32le(&r);
	if (d->version != 3 && d->version != 4) {
		snprintf(what, sizeof what, "version %d is not supported (only 3 and 4)",
			 d->version);
		return bad_header(err, -ENOTSUP, 4, what);
	}
	static const char *const names[] = {"num_item_types", "num_items", "num_data",
					    "item_size", "data_size"};
	int32_t vals[] = {d->num_types, d->num_items, d->num_data, d->item_size,
			  d->data_size};
	for (int i = 0; i < 5; i++) {
		if (vals[i] < 0) {
			snprintf(what, sizeof what, "%s is negative (%d)", names[i], vals[i]);
			return bad_header(err, -EBADMSG, 16 + 4 * (uint64_t)i, what);
		}
	}
	/* Each count alone must fit the file, then all of them together. */
	uint64_t per[3] = {(uint64_t)d->num_types * 12, (uint64_t)d->num_items * 4,
			   (uint64_t)d->num_data * (d->version == 4 ? 8 : 4)};
	for (int i = 0; i < 3; i++) {
		if (HDR + per[i] > fsize) {
			snprintf(what, sizeof what,
				 "%s %d needs %llu bytes of index, past the end of the file "
				 "(%llu bytes)", names[i], vals[i], (unsigned long long)per[i],
				 (unsigned long long)fsize);
			return bad_header(err, -EBADMSG, 16 + 4 * (uint64_t)i, what);
		}
	}
	uint64_t index = per[0] + per[1] + per[2];
	if (HDR + index > fsize) {
		snprintf(what, sizeof what,
			 "the index of %llu bytes (%d item types, %d items, %d data) runs past "
			 "the end of the file (%llu bytes)",
			 (unsigned long long)index, d->num_types, d->num_items, d->num_data,
			 (unsigned long long)fsize);
		return bad_header(err, -EBADMSG, HDR, what);
	}
	uint64_t end = HDR + index + (uint64_t)d->item_size + (uint64_t)d->data_size;
	if (end != fsize) {
		snprintf(what, sizeof what,
			 "sections end at %llu but the file is %llu bytes (item_size %d, "
			 "data_size %d)",
			 (unsigned long long)end, (unsigned long long)fsize, d->item_size,
			 d->data_size);
		return bad_header(err, -EBADMSG, 28, what);
	}
	uint64_t want = fsize - 16;
	if ((uint64_t)(uint32_t)d->size == want) {
		d->crude = false;
	} else if (d->version == 4 && (uint64_t)(uint32_t)d->size + 4 * (uint64_t)d->num_data == want &&
		   d->num_data > 0) {
		d->crude = true;
	} else {
		snprintf(what, sizeof what, "size field %d does not match the file (%llu expected)",
			 d->size, (unsigned long long)want);
		return bad_header(err, -EBADMSG, 8, what);
	}
	if ((int64_t)d->swaplen != (int64_t)d->size - d->data_size)
		sv_warn(c, "datafile: swaplen %d is not size - data_size (%lld)", d->swaplen,
			(long long)d->size - d->data_size);
	if (d->crude)
		sv_warn(c, "datafile: size and swaplen omit the data size table "
			   "(%d bytes short, as old writers did)", 4 * d->num_data);
	return 0;
}

static const char *type_name(uint16_t t)
{
	if (t < sizeof map_types / sizeof *map_types)
		return map_types[t];
	if (t == UUID_TYPE)
		return "uuid-index";
	return NULL;
}

static struct typeinfo *find_type(struct df *d, uint16_t t)
{
	size_t lo = 0, hi = d->ntypes;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->types[mid].type < t)
			lo = mid + 1;
		else if (d->types[mid].type > t)
			hi = mid;
		else
			return &d->types[mid];
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* Collects the types present and names their directories. */
static int name_types(struct sv_container *c, struct df *d)
{
	uint16_t *ts = malloc(((size_t)d->num_items + 1) * sizeof *ts);
	if (!ts)
		return -ENOMEM;
	for (int32_t i = 0; i < d->num_items; i++)
		ts[i] = d->items[i].type;
	qsort(ts, (size_t)d->num_items, sizeof *ts, cmp_u16);
	d->types = calloc((size_t)d->num_items + 1, sizeof *d->types);
	if (!d->types) {
		free(ts);
		return -ENOMEM;
	}
	for (int32_t i = 0; i < d->num_items; i++)
		if (!d->ntypes || d->types[d->ntypes - 1].type != ts[i])
			d->types[d->ntypes++].type = ts[i];
	free(ts);
	/* UUID index items name the extended types. */
	for (int32_t i = 0; i < d->num_items; i++) {
		const struct item *it = &d->items[i];
		if (it->type != UUID_TYPE)
			continue;
		struct typeinfo *t = find_type(d, it->id);
		if (!t || it->len < 16) {
			if (it->len < 16)
				sv_warn(c, "datafile: UUID index item %u has %u bytes, not 16",
					it->id, it->len);
			continue;
		}
		const uint8_t *p = d->items_sec + it->off;
		uint8_t u[16];
		for (int k = 0; k < 16; k += 4) {
			/* Each int is stored little-endian; its big-endian bytes are the UUID. */
			u[k] = p[k + 3];
			u[k + 1] = p[k + 2];
			u[k + 2] = p[k + 1];
			u[k + 3] = p[k];
		}
		if (t->has_uuid) {
			/* Real maps repeat the same index item; only a conflict matters. */
			if (memcmp(t->uuid, u, 16))
				sv_warn(c, "datafile: type %u is named by two different UUIDs; "
					   "the first is used", it->id);
			continue;
		}
		memcpy(t->uuid, u, 16);
		t->has_uuid = true;
	}
	for (size_t i = 0; i < d->ntypes; i++) {
		struct typeinfo *t = &d->types[i];
		t->known = type_name(t->type);
		if (t->has_uuid) {
			for (size_t k = 0; k < sizeof known_uuids / sizeof *known_uuids; k++)
				if (!memcmp(known_uuids[k].uuid, t->uuid, 16))
					t->known = known_uuids[k].name;
			if (!t->known) {
				char s[40];
				uuid_str(t->uuid, s);
				snprintf(t->name, sizeof t->name, "%u-%s", t->type, s);
				continue;
			}
		}
		if (t->known)
			snprintf(t->name, sizeof t->name, "%u-%s", t->type, t->known);
		else
			snprintf(t->name, sizeof t->name, "%u", t->type);
	}
	return 0;
}

/* Reads the index: item types, item and data offsets, sizes, items. */
static int read_index(struct sv_container *c, struct df *d, struct sv_err *err)
{
	size_t ilen = (size_t)d->num_types * 12 + (size_t)d->num_items * 4 +
		      (size_t)d->num_data * (d->version == 4 ? 8 : 4);
	uint8_t *idx = malloc(ilen ? ilen : 1);
	d->items_sec = malloc(d->item_size ? (size_t)d->item_size : 1);
	d->items = calloc((size_t)d->num_items + 1, sizeof *d->items);
	d->item_node = calloc((size_t)d->num_items + 1, sizeof *d->item_node);
	d->data = calloc((size_t)d->num_data + 1, sizeof *d->data);
	d->data_node = calloc((size_t)d->num_data + 1, sizeof *d->data_node);
	d->raw_types = json_array();
	char what[240];
	int rc = 0;
	if (!idx || !d->items_sec || !d->items || !d->item_node || !d->data || !d->data_node || !d->raw_types) {
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory reading the index");
		goto out;
	}
	rc = sv_container_pread(c, HDR, idx, ilen, err);
	if (!rc)
		rc = sv_container_pread(c, HDR + ilen, d->items_sec, (size_t)d->item_size, err);
	if (rc)
		goto out;
	struct sv_rd r;
	sv_rd_init(&r, idx, ilen);
	/* The type table is kept for header.json and checked for consistency. */
	int64_t running = 0;
	bool table_ok = true;
	for (int32_t i = 0; i < d->num_types; i++) {
		int32_t type = sv_rd_i32le(&r), start = sv_rd_i32le(&r), num = sv_rd_i32le(&r);
		json_t *o = json_object();
		json_object_set_new(o, "type", json_integer(type));
		json_object_set_new(o, "start", json_integer(start));
		json_object_set_new(o, "num", json_integer(num));
		json_array_append_new(d->raw_types, o);
		if (type < 0 || type > 0xFFFF || start != running || num < 0)
			table_ok = false;
		running += num;
	}
	if (running != d->num_items)
		table_ok = false;
	uint64_t items_base = HDR + ilen;
	uint64_t data_base = items_base + (uint64_t)d->item_size;
	size_t ioff_at = (size_t)d->num_types * 12;
	int32_t *ioffs = malloc(((size_t)d->num_items + 1) * sizeof *ioffs);
	if (!ioffs) {
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory reading the index");
		goto out;
	}
	for (int32_t i = 0; i < d->num_items; i++)
		ioffs[i] = sv_rd_i32le(&r);
	ioffs[d->num_items] = d->item_size;
	for (int32_t i = 0; i < d->num_items && !rc; i++) {
		int32_t off = ioffs[i];
		uint64_t where = HDR + ioff_at + 4 * (uint64_t)i;
		if (off < 0 || off > d->item_size - 8) {
			snprintf(what, sizeof what,
				 "item %d: offset %d lies outside the items section (%d bytes)", i,
				 off, d->item_size);
			rc = bad_header(err, -EBADMSG, where, what);
		} else if (i > 0 && off < ioffs[i - 1] + 8) {
			snprintf(what, sizeof what,
				 "item %d: offset %d is inside item %d, which starts at %d", i, off,
				 i - 1, ioffs[i - 1]);
			rc = bad_header(err, -EBADMSG, where, what);
		}
	}
	for (int32_t i = 0; i < d->num_items && !rc; i++) {
		int32_t off = ioffs[i], room = ioffs[i + 1] - off - 8;
		struct sv_rd ir;
		sv_rd_init(&ir, d->items_sec, (size_t)d->item_size);
		sv_rd_seek(&ir, (size_t)off);
		uint32_t tid = sv_rd_u32le(&ir);
		int32_t size = sv_rd_i32le(&ir);
		const char *why = size < 0 ? "is negative" : size % 4 ? "is not a multiple of 4"
				: size > room ? "does not fit before the next item" : NULL;
		if (why) {
			snprintf(what, sizeof what, "item %d: payload size %d %s (%d bytes there)",
				 i, size, why, room);
			rc = bad_header(err, -EBADMSG, items_base + (uint64_t)off + 4, what);
			break;
		}
		d->items[i].type = (uint16_t)(tid >> 16);
		d->items[i].id = (uint16_t)tid;
		d->items[i].off = (uint32_t)off + 8;
		d->items[i].len = (uint32_t)size;
	}
	free(ioffs);
	if (rc)
		goto out;
	if (!table_ok)
		sv_warn(c, "datafile: the item type table does not match the items; "
			   "the items' own types are used");
	/* Data: offsets, then (v4) sizes.  Problems mark the one item bad. */
	/* The reader stands at the data offsets, then (v4) the sizes. */
	int32_t *doffs = malloc(((size_t)d->num_data + 1) * 2 * sizeof *doffs);
	if (!doffs) {
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory reading the index");
		goto out;
	}
	int32_t *next = doffs + d->num_data + 1;
	for (int32_t i = 0; i < d->num_data; i++)
		doffs[i] = sv_rd_i32le(&r);
	/* An item ends where the next in-range offset begins: a broken offset
	 * of a later item is that item's problem, not this one's. */
	int32_t following = d->data_size;
	for (int32_t i = d->num_data - 1; i >= 0; i--) {
		next[i] = following;
		if (doffs[i] >= 0 && doffs[i] <= d->data_size)
			following = doffs[i];
	}
	const uint64_t limit = sv_container_opts(c)->max_decode;
	for (int32_t i = 0; i < d->num_data; i++) {
		int32_t off = doffs[i];
		struct data *e = &d->data[i];
		char why[200] = "";
		if (off < 0 || off > d->data_size) {
			snprintf(why, sizeof why, "offset %d lies outside the data section (%d bytes)",
				 off, d->data_size);
		} else if (next[i] < off) {
			snprintf(why, sizeof why, "offset %d is past the next item's (%d)", off,
				 next[i]);
		} else {
			e->off = data_base + (uint64_t)off;
			e->len = (uint32_t)(next[i] - off);
			e->raw = e->len;
		}
		if (d->version == 4) {
			int32_t raw = sv_rd_i32le(&r);
			if (raw < 0) {
				if (!why[0])
					snprintf(why, sizeof why, "uncompressed size %d is negative", raw);
				e->raw = 0;
			} else {
				e->raw = (uint32_t)raw;
			}
		}
		if (!why[0] && e->raw > limit)
			snprintf(why, sizeof why, "size %u is over the decode limit of %llu bytes",
				 e->raw, (unsigned long long)limit);
		if (why[0]) {
			char full[260];
			snprintf(full, sizeof full, "datafile: data item %d: %s", i, why);
			e->bad = strdup(full);
			sv_warn(c, "%s", full);
		}
	}
	free(doffs);
	rc = name_types(c, d) ? sv_err_set(err, -ENOMEM, "datafile: out of memory") : 0;
out:
	free(idx);
	return rc;
}

static int make_header_json(struct df *d)
{
	json_t *o = json_object();
	json_object_set_new(o, "magic", json_string(d->magic));
	json_object_set_new(o, "version", json_integer(d->version));
	json_object_set_new(o, "size", json_integer(d->size));
	json_object_set_new(o, "swaplen", json_integer(d->swaplen));
	json_object_set_new(o, "num_item_types", json_integer(d->num_types));
	json_object_set_new(o, "num_items", json_integer(d->num_items));
	json_object_set_new(o, "num_data", json_integer(d->num_data));
	json_object_set_new(o, "item_size", json_integer(d->item_size));
	json_object_set_new(o, "data_size", json_integer(d->data_size));
	json_t *q = json_array();
	if (d->crude)
		json_array_append_new(q, json_string("crude-size: size and swaplen omit the "
						     "data size table"));
	if ((int64_t)d->swaplen != (int64_t)d->size - d->data_size)
		json_array_append_new(q, json_string("swaplen-mismatch"));
	if (!memcmp(d->magic, "ATAD", 4))
		json_array_append_new(q, json_string("atad-magic: written by a big-endian host"));
	json_object_set_new(o, "quirks", q);
	uint32_t *counts = calloc(d->ntypes + 1, sizeof *counts);
	if (!counts) {
		json_decref(o);
		return -ENOMEM;
	}
	for (int32_t k = 0; k < d->num_items; k++)
		counts[find_type(d, d->items[k].type) - d->types]++;
	json_t *types = json_array();
	for (size_t i = 0; i < d->ntypes; i++) {
		const struct typeinfo *t = &d->types[i];
		json_t *e = json_object();
		uint32_t count = counts[i];
		json_object_set_new(e, "type", json_integer(t->type));
		json_object_set_new(e, "name", t->known ? json_string(t->known) : json_null());
		if (t->has_uuid) {
			char s[40];
			uuid_str(t->uuid, s);
			json_object_set_new(e, "uuid", json_string(s));
		}
		json_object_set_new(e, "items", json_integer(count));
		json_object_set_new(e, "directory", json_string(t->name));
		json_array_append_new(types, e);
	}
	free(counts);
	json_object_set_new(o, "types", types);
	json_object_set(o, "item_type_table", d->raw_types);
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	size_t n = strlen(s);
	d->header = malloc(n + 2);
	if (d->header) {
		memcpy(d->header, s, n);
		d->header[n] = '\n';
		d->header[n + 1] = '\0';
		d->header_len = n + 1;
	}
	free(s);
	return d->header ? 0 : -ENOMEM;
}

static int build_tree(struct sv_container *c, struct df *d)
{
	d->items_dir = sv_node_add(c, SV_ROOT, "items", SV_N_DIR, 0, 0);
	d->data_dir = sv_node_add(c, SV_ROOT, "data", SV_N_DIR, 0, 0);
	if (d->items_dir == SV_NONE || d->data_dir == SV_NONE)
		return -ENOMEM;
	for (size_t i = 0; i < d->ntypes; i++) {
		struct typeinfo *t = &d->types[i];
		t->dir = sv_node_add(c, d->items_dir, t->name, SV_N_DIR, 0,
				     KEY(K_TYPEDIR, t->type));
		if (t->dir == SV_NONE)
			return -ENOMEM;
	}
	char name[32];
	/* Items in ascending type order, then file order within a type. */
	uint64_t *order = malloc(((size_t)d->num_items + 1) * sizeof *order);
	if (!order)
		return -ENOMEM;
	for (int32_t i = 0; i < d->num_items; i++)
		order[i] = (uint64_t)d->items[i].type << 32 | (uint32_t)i;
	qsort(order, (size_t)d->num_items, sizeof *order, cmp_u64);
	for (int32_t k = 0; k < d->num_items; k++) {
		uint32_t i = (uint32_t)order[k];
		const struct item *it = &d->items[i];
		snprintf(name, sizeof name, "%05u.bin", it->id);
		d->item_node[i] = sv_node_add(c, find_type(d, it->type)->dir, name, 0, it->len,
					      KEY(K_ITEM, i));
		if (d->item_node[i] == SV_NONE) {
			free(order);
			return -ENOMEM;
		}
	}
	free(order);
	for (int32_t i = 0; i < d->num_data; i++) {
		snprintf(name, sizeof name, "%05d.bin", i);
		d->data_node[i] = sv_node_add(c, d->data_dir, name, d->data[i].bad ? SV_N_BAD : 0,
					      d->data[i].raw, KEY(K_DATA, i));
		if (d->data_node[i] == SV_NONE)
			return -ENOMEM;
	}
	int rc = sv_twm_build(c, d);
	if (rc)
		return rc;
	/* Listed after what it describes: a tool that copies the tree back in
	 * listing order (tar) restores the items before it meets this view. */
	if (sv_node_add(c, SV_ROOT, "header.json", SV_N_RO | SV_N_DERIVED, d->header_len,
			KEY(K_HEADER, 0)) == SV_NONE)
		return -ENOMEM;
	return 0;
}

static int open_df(struct sv_container *c, struct sv_err *err)
{
	struct df *d = calloc(1, sizeof *d);
	if (!d)
		return sv_err_set(err, -ENOMEM, "datafile: out of memory");
	sv_container_set_priv(c, d);
	int rc = read_header(c, d, err);
	if (!rc)
		rc = read_index(c, d, err);
	if (!rc && make_header_json(d))
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory");
	if (!rc && build_tree(c, d))
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory");
	return rc;
}

int sv_df_ext_type(const struct df *d, const char *name)
{
	for (size_t i = 0; i < d->ntypes; i++)
		if (d->types[i].known && !strcmp(d->types[i].known, name) &&
		    d->types[i].type >= 0x8000 && d->types[i].type < UUID_TYPE)
			return d->types[i].type;
	return -1;
}

int sv_df_data(struct sv_container *c, const struct df *d, int32_t i, uint64_t max,
	       struct sv_blob **out, struct sv_err *err)
{
	*out = NULL;
	if (i < 0 || i >= d->num_data)
		return sv_err_set(err, -EBADMSG, "datafile: data item %d does not exist (%d in all)",
				  i, d->num_data);
	const struct data *e = &d->data[i];
	if (e->bad)
		return sv_err_set(err, -EBADMSG, "%s", e->bad);
	if (e->raw > max)
		return sv_err_set(err, -EFBIG, "datafile: data item %d: %u bytes, more than %llu",
				  i, e->raw, (unsigned long long)max);
	if (d->version == 3) {
		*out = sv_blob_new(e->len);
		if (!*out)
			return sv_err_set(err, -ENOMEM, "datafile: out of memory");
		int rc = sv_container_pread(c, e->off, (*out)->data, e->len, err);
		if (rc) {
			sv_blob_unref(*out);
			*out = NULL;
		}
		return rc;
	}
	if (e->raw == 0 && e->len == 0) {
		*out = sv_blob_new(0);
		return *out ? 0 : sv_err_set(err, -ENOMEM, "datafile: out of memory");
	}
	uint8_t *z = malloc(e->len ? e->len : 1);
	*out = sv_blob_new(e->raw);
	if (!z || !*out) {
		free(z);
		sv_blob_unref(*out);
		*out = NULL;
		return sv_err_set(err, -ENOMEM, "datafile: out of memory");
	}
	struct sv_err e2;
	sv_err_clear(&e2);
	int rc = sv_container_pread(c, e->off, z, e->len, &e2);
	if (!rc)
		rc = sv_inflate(z, e->len, (*out)->data, e->raw, &e2);
	free(z);
	if (rc) {
		sv_blob_unref(*out);
		*out = NULL;
		return sv_err_set(err, rc, "datafile: data item %d: %s", i, e2.msg);
	}
	return 0;
}

static int load_df(struct sv_container *c, uint32_t n, struct sv_blob **out,
		   struct sv_err *err)
{
	struct df *d = sv_container_priv(c);
	const struct sv_node *node = sv_node(c, n);
	uint32_t i = INDEX(node->key);
	switch (KIND(node->key)) {
	case K_HEADER:
		*out = sv_blob_dup(d->header, d->header_len);
		break;
	case K_ITEM:
		*out = sv_blob_dup(d->items_sec + d->items[i].off, d->items[i].len);
		break;
	case K_DATA:
		return sv_df_data(c, d, (int32_t)i, UINT64_MAX, out, err);
	default:
		if (KIND(node->key) >= 16)
			return sv_twm_load(c, d, n, out, err);
		return sv_err_set(err, -EIO, "datafile: not a file");
	}
	return *out ? 0 : sv_err_set(err, -ENOMEM, "datafile: out of memory");
}

/* The stored bytes a raw item or data item is made from (a data item's
 * as stored, before it is inflated), with the kind and the datafile's
 * version (3 stores data as it is, 4 deflated): the digest savefs diff
 * compares before it reads the file.  Not for the map's views, made from
 * several items. */
static int stored_df(struct sv_container *c, uint32_t n, uint64_t *out, struct sv_err *err)
{
	struct df *d = sv_container_priv(c);
	const struct sv_node *node = sv_node(c, n);
	uint32_t i = INDEX(node->key);
	uint64_t head[3] = {KIND(node->key), (uint64_t)d->version, 0};
	if (KIND(node->key) == K_ITEM) {
		head[2] = XXH3_64bits(d->items_sec + d->items[i].off, d->items[i].len);
		*out = XXH3_64bits(head, sizeof head);
		return 0;
	}
	if (KIND(node->key) != K_DATA || d->data[i].bad ||
	    d->data[i].len > sv_container_opts(c)->max_decode)
		return -ENOENT;
	uint8_t *buf = malloc(d->data[i].len ? d->data[i].len : 1);
	if (!buf)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = sv_container_pread(c, d->data[i].off, buf, d->data[i].len, err);
	if (!rc) {
		head[2] = XXH3_64bits(buf, d->data[i].len) ^ ((uint64_t)d->data[i].raw << 1);
		*out = XXH3_64bits(head, sizeof head);
	}
	free(buf);
	return rc;
}

/* ---- edits ------------------------------------------------------------- */

static bool is_item_dir(struct df *d, struct sv_container *c, uint32_t dir)
{
	const struct sv_node *n = sv_node(c, dir);
	return n && n->parent == d->items_dir && KIND(n->key) == K_TYPEDIR && dir != d->items_dir;
}

static int check_df(struct sv_container *c, uint32_t n, const uint8_t *p, size_t len,
		    struct sv_err *err)
{
	struct df *d = sv_container_priv(c);
	const struct sv_node *node = sv_node(c, n);
	if (KIND(node->key) >= 16 && d->map)
		return sv_twm_check(c, d, n, p, len, err);
	bool item = KIND(node->key) == K_ITEM || is_item_dir(d, c, node->parent);
	if (len > INT32_MAX - 8)
		return sv_err_set(err, -EFBIG, "datafile: %zu bytes is too large for a datafile",
				  len);
	if (item && len % 4)
		return sv_err_set(err, -EINVAL,
				  "datafile: an item is a list of int32: its size must be a "
				  "multiple of 4 bytes, not %zu", len);
	return 0;
}

/* Parses a name as this format writes it, "%05u.bin" (five digits, more
 * past 99999, no other leading zeros); -1 if it is not one. */
static long parse_name(const char *name)
{
	size_t n = strlen(name);
	if (n < 9 || n > 14 || strcmp(name + n - 4, ".bin"))
		return -1;
	long v = 0;
	for (size_t i = 0; i < n - 4; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		v = v * 10 + (name[i] - '0');
	}
	char canon[32];
	snprintf(canon, sizeof canon, "%05ld.bin", v);
	return strcmp(canon, name) ? -1 : v;
}

static int create_df(struct sv_container *c, uint32_t parent, const char *name,
		     struct sv_err *err)
{
	struct df *d = sv_container_priv(c);
	long v = parse_name(name);
	if (v < 0)
		return -ENOENT;
	if (is_item_dir(d, c, parent))
		return v <= 0xFFFF ? 0 : -ENOENT;
	if (parent == d->data_dir) {
		/* Only the next index, and one new data item at a time: anything
		 * else would leave a gap or renumber a file still being written. */
		const struct sv_node *dir = sv_node(c, parent);
		for (uint32_t k = 0; k < dir->nkids; k++)
			if (sv_node_state(c, dir->kids[k]) & SV_S_NEW)
				return -ENOENT;
		return v == d->num_data ? 0 : -ENOENT;
	}
	return -ENOENT;
}

static int unlink_df(struct sv_container *c, uint32_t n, struct sv_err *err)
{
	const struct sv_node *node = sv_node(c, n);
	if (KIND(node->key) == K_ITEM)
		return 0;
	if (KIND(node->key) == K_DATA)
		return sv_err_set(err, -EPERM,
				  "datafile: items refer to data items by index, so one cannot "
				  "be removed (truncate it to 0 bytes instead)");
	return sv_err_set(err, -EPERM, "datafile: this file cannot be removed");
}

static int commit_df(struct sv_container *c, int fd, struct sv_err *err)
{
	struct df *d = sv_container_priv(c);
	uint32_t total = sv_node_count(c);
	struct sv_df_witem *items = calloc((size_t)total + 1, sizeof *items);
	struct sv_df_wdata *data = calloc((size_t)total + 1, sizeof *data);
	size_t ni = 0, nd = 0;
	struct sv_twm_out mo;
	memset(&mo, 0, sizeof mo);
	int rc = 0;
	if (!items || !data) {
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory");
		goto out;
	}
	/* The map view's edits, as new items and data. */
	if ((rc = sv_twm_commit(c, d, &mo, err)))
		goto out;
	data = realloc(data, ((size_t)total + mo.nadded + 1) * sizeof *data);
	if (!data) {
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory");
		goto out;
	}
	/* Items: every live item node, in tree order (types ascending). */
	for (size_t ti = 0; ti < d->ntypes; ti++) {
		const struct sv_node *dir = sv_node(c, d->types[ti].dir);
		for (uint32_t k = 0; k < dir->nkids; k++) {
			uint32_t n = dir->kids[k];
			const struct sv_node *node = sv_node(c, n);
			if (!sv_node_in_commit(c, n))
				continue;
			const struct sv_buf *edit = sv_node_edit(c, n);
			struct sv_df_witem *w = &items[ni++];
			w->type = d->types[ti].type;
			if (KIND(node->key) == K_ITEM && !(sv_node_state(c, n) & SV_S_NEW)) {
				const struct item *it = &d->items[INDEX(node->key)];
				w->id = it->id;
				w->p = d->items_sec + it->off;
				w->len = it->len;
				if (mo.item_set && mo.item_set[INDEX(node->key)]) {
					w->p = mo.item[INDEX(node->key)].p;
					w->len = (uint32_t)mo.item[INDEX(node->key)].len;
				}
			} else {
				w->id = (uint16_t)parse_name(node->name);
			}
			if (edit) {
				w->p = edit->p;
				w->len = (uint32_t)edit->len;
			}
		}
	}
	/* An info item the map did not have, made by an edit of its info. */
	if (mo.new_info) {
		struct sv_df_witem *w = &items[ni++];
		w->type = 1;
		w->id = 0;
		w->p = mo.item[d->num_items].p;
		w->len = (uint32_t)mo.item[d->num_items].len;
	}
	/* Data by index: a node's key holds its index; new ones follow in
	 * name order (only the next index is ever created). */
	const struct sv_node *ddir = sv_node(c, d->data_dir);
	uint32_t *slot = calloc((size_t)d->num_data + 1, sizeof *slot);
	if (!slot) {
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < ddir->nkids; k++) {
		uint32_t n = ddir->kids[k];
		const struct sv_node *node = sv_node(c, n);
		if (!(sv_node_state(c, n) & (SV_S_TEMP | SV_S_GONE | SV_S_NEW)) &&
		    KIND(node->key) == K_DATA && INDEX(node->key) < (uint32_t)d->num_data)
			slot[INDEX(node->key)] = n + 1;
	}
	for (int32_t i = 0; i < d->num_data; i++) {
		if (!slot[i])
			continue; /* removed: cannot happen through unlink_df */
		uint32_t n = slot[i] - 1;
		const struct sv_buf *edit = sv_node_edit(c, n);
		struct sv_df_wdata *w = &data[nd++];
		if (!edit && mo.data_set && mo.data_set[i])
			edit = &mo.data[i];
		if (edit) {
			w->raw = edit->p;
			w->raw_len = (uint32_t)edit->len;
			continue;
		}
		const struct data *e = &d->data[i];
		if (e->bad && !e->off) {
			sv_log(c, "%s: written as an empty data item", e->bad);
			continue;
		}
		w->stored = true;
		w->fd = sv_container_fd(c);
		w->off = e->off;
		w->len = e->len;
		w->raw_size = (int32_t)e->raw;
	}
	free(slot);
	/* A new data item (there is at most one) goes last. */
	for (uint32_t k = 0; k < ddir->nkids; k++) {
		uint32_t n = ddir->kids[k];
		if (!(sv_node_state(c, n) & SV_S_NEW) || !sv_node_in_commit(c, n))
			continue;
		if (mo.nadded) {
			rc = sv_err_set(err, -EBUSY, "datafile: a new data item and a map/ edit that "
					"adds one in one commit: commit one, then the other");
			goto out;
		}
		const struct sv_buf *edit = sv_node_edit(c, n);
		struct sv_df_wdata *w = &data[nd++];
		w->raw = edit ? edit->p : NULL;
		w->raw_len = edit ? (uint32_t)edit->len : 0;
	}
	/* Data items the map view adds: numbered from num_data on. */
	for (size_t k = 0; k < mo.nadded; k++) {
		struct sv_df_wdata *w = &data[nd++];
		w->raw = mo.added[k].p;
		w->raw_len = (uint32_t)mo.added[k].len;
	}
	struct sv_df_spec spec = {
		.version = d->version,
		.items = items, .nitems = ni,
		.data = data, .ndata = nd,
		.level = -1,
	};
	memcpy(spec.magic, d->magic, 4);
	rc = sv_df_write(fd, &spec, err);
out:
	sv_twm_out_fini(&mo);
	free(items);
	free(data);
	return rc;
}

static void info_df(struct sv_container *c, void *obj)
{
	struct df *d = sv_container_priv(c);
	json_t *o = obj;
	uint32_t bad = 0;
	for (int32_t i = 0; i < d->num_data; i++)
		bad += d->data[i].bad != NULL;
	json_object_set_new(o, "format_version", json_integer(d->version));
	json_t *counts = json_object();
	json_object_set_new(counts, "item_types", json_integer((json_int_t)d->ntypes));
	json_object_set_new(counts, "items", json_integer(d->num_items));
	json_object_set_new(counts, "data", json_integer(d->num_data));
	json_object_set_new(counts, "bad_data", json_integer(bad));
	json_object_set_new(o, "counts", counts);
}

/* ---- writer ------------------------------------------------------------ */

struct order {
	const struct sv_df_witem *it;
	size_t pos;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->it->type != y->it->type)
		return x->it->type < y->it->type ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int sv_df_write(int fd, const struct sv_df_spec *s, struct sv_err *err)
{
	struct order *ord = calloc(s->nitems + 1, sizeof *ord);
	uint8_t **z = calloc(s->ndata + 1, sizeof *z);
	uint32_t *zlen = calloc(s->ndata + 1, sizeof *zlen);
	struct sv_buf idx;
	sv_buf_init(&idx);
	int rc = 0;
	if (!ord || !z || !zlen) {
		rc = sv_err_set(err, -ENOMEM, "datafile: out of memory");
		goto out;
	}
	uint64_t item_size = 0;
	for (size_t i = 0; i < s->nitems; i++) {
		if (s->items[i].len % 4) {
			rc = sv_err_set(err, -EINVAL,
					"datafile: item %zu: size %u is not a multiple of 4", i,
					s->items[i].len);
			goto out;
		}
		ord[i].it = &s->items[i];
		ord[i].pos = i;
		item_size += 8 + (uint64_t)s->items[i].len;
	}
	qsort(ord, s->nitems, sizeof *ord, cmp_order);
	/* Compress raw data first: the offsets depend on the stored sizes. */
	uint64_t data_size = 0;
	for (size_t i = 0; i < s->ndata; i++) {
		const struct sv_df_wdata *w = &s->data[i];
		if (w->stored) {
			zlen[i] = w->len;
		} else if (s->version == 3) {
			zlen[i] = w->raw_len;
		} else {
			uLongf bound = compressBound(w->raw_len);
			z[i] = malloc(bound);
			if (!z[i]) {
				rc = sv_err_set(err, -ENOMEM, "datafile: out of memory");
				goto out;
			}
			if (compress2(z[i], &bound, w->raw ? w->raw : (const uint8_t *)"",
				      w->raw_len, s->level) != Z_OK) {
				rc = sv_err_set(err, -EIO, "datafile: zlib failed on data item %zu", i);
				goto out;
			}
			zlen[i] = (uint32_t)bound;
		}
		data_size += zlen[i];
	}
	size_t ntypes = 0;
	for (size_t i = 0; i < s->nitems; i++)
		if (!i || ord[i].it->type != ord[i - 1].it->type)
			ntypes++;
	uint64_t index = 12 * (uint64_t)ntypes + 4 * (uint64_t)s->nitems +
			 4 * (uint64_t)s->ndata * (s->version == 4 ? 2 : 1);
	uint64_t total = HDR + index + item_size + data_size;
	if (total - 16 > INT32_MAX || s->nitems > INT32_MAX / 4 || s->ndata > INT32_MAX / 8) {
		rc = sv_err_set(err, -EFBIG, "datafile: %llu bytes is too large for a datafile",
				(unsigned long long)total);
		goto out;
	}
	if (s->version != 3 && s->version != 4) {
		rc = sv_err_set(err, -EINVAL, "datafile: cannot write version %d", s->version);
		goto out;
	}
	uint64_t size = total - 16;
	if (s->crude_size && s->version == 4)
		size -= 4 * (uint64_t)s->ndata;
	uint8_t w4[4];
#define PUT(v) do { sv_put_u32le(w4, (uint32_t)(v)); \
		if ((rc = sv_buf_add(&idx, w4, 4))) goto nomem; } while (0)
	if ((rc = sv_buf_add(&idx, s->magic, 4)))
		goto nomem;
	PUT(s->version);
	PUT(size);
	PUT(size - data_size);
	PUT(ntypes);
	PUT(s->nitems);
	PUT(s->ndata);
	PUT(item_size);
	PUT(data_size);
	for (size_t i = 0; i < s->nitems;) {
		size_t j = i;
		while (j < s->nitems && ord[j].it->type == ord[i].it->type)
			j++;
		PUT(ord[i].it->type);
		PUT(i);
		PUT(j - i);
		i = j;
	}
	uint64_t off = 0;
	for (size_t i = 0; i < s->nitems; i++) {
		PUT(off);
		off += 8 + (uint64_t)ord[i].it->len;
	}
	off = 0;
	for (size_t i = 0; i < s->ndata; i++) {
		PUT(off);
		off += zlen[i];
	}
	if (s->version == 4)
		for (size_t i = 0; i < s->ndata; i++)
			PUT(s->data[i].stored ? (uint32_t)s->data[i].raw_size : s->data[i].raw_len);
	for (size_t i = 0; i < s->nitems; i++) {
		const struct sv_df_witem *it = ord[i].it;
		PUT((uint32_t)it->type << 16 | it->id);
		PUT(it->len);
		if ((rc = sv_buf_add(&idx, it->p, it->len)))
			goto nomem;
	}
#undef PUT
	rc = sv_write_all(fd, idx.p, idx.len);
	for (size_t i = 0; i < s->ndata && !rc; i++) {
		const struct sv_df_wdata *w = &s->data[i];
		if (w->stored)
			rc = sv_copy_range(w->fd, w->off, fd, w->len);
		else
			rc = sv_write_all(fd, z[i] ? z[i] : w->raw, zlen[i]);
	}
	if (rc)
		rc = sv_err_set(err, rc, "datafile: writing the new file failed: %s",
				strerror(-rc));
	goto out;
nomem:
	rc = sv_err_set(err, -ENOMEM, "datafile: out of memory");
out:
	if (z)
		for (size_t i = 0; i < s->ndata; i++)
			free(z[i]);
	free(z);
	free(zlen);
	free(ord);
	sv_buf_fini(&idx);
	return rc;
}

static const char *const names_datafile[] = {"*.map", NULL};

static const struct sv_format_edits datafile_edits = {
	.commit_file = SV_COMMIT_REWRITE,
	.check = check_df,
	.create = create_df,
	.unlink = unlink_df,
	.commit = commit_df,
};

const struct sv_format sv_fmt_datafile = {
	.name = "datafile",
	.description = "Teeworlds/DDNet map datafile (.map), versions 3 and 4",
	.names = names_datafile,
	.previews = (const char *const[]){"map/game.png", NULL},
	.probe = probe_df,
	.open = open_df,
	.close = close_df,
	.stored = stored_df,
	.load = load_df,
	.edits = &datafile_edits,
	.info = info_df,
};
