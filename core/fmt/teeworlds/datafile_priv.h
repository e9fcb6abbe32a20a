/*
 * datafile_priv.h - the datafile reader's state, shared by the raw view
 * (datafile.c) and the map view (twmap.c).  Everything here is read from
 * the container's header, index and items section at open; data items
 * are read on demand with sv_df_data().
 */
#ifndef SV_DATAFILE_PRIV_H
#define SV_DATAFILE_PRIV_H

#include "datafile.h"

#include <jansson.h>

#define HDR 36
#define UUID_TYPE 0xFFFFu

/* Node keys: a kind (high 32 bits) and an index.  The raw view uses kinds
 * below 16, the map view 16 and up. */
enum { K_HEADER = 1, K_ITEM = 2, K_DATA = 3, K_TYPEDIR = 4 };
#define KEY(kind, i) ((uint64_t)(kind) << 32 | (uint32_t)(i))
#define KIND(k) ((uint32_t)((k) >> 32))
#define INDEX(k) ((uint32_t)(k))

struct item {
	uint16_t type, id;
	uint32_t off;  /* payload offset within the items section */
	uint32_t len;  /* payload bytes */
};

struct data {
	uint64_t off;      /* absolute file offset of the stored bytes */
	uint32_t len;      /* stored bytes */
	uint32_t raw;      /* inflated size (v4 size table; v3: len) */
	char *bad;         /* why this item cannot be read, or NULL */
};

struct typeinfo {
	uint16_t type;
	uint32_t dir;       /* node of items/<type>/ */
	char name[96];      /* directory name */
	const char *known;  /* the type's name, or NULL */
	bool has_uuid;
	uint8_t uuid[16];
};

struct twm;

struct df {
	char magic[5];
	int32_t version, size, swaplen, num_types, num_items, num_data;
	int32_t item_size, data_size;
	bool crude;
	uint8_t *items_sec;      /* the whole items section */
	struct item *items;
	uint32_t *item_node;     /* node per item */
	uint32_t *data_node;     /* node per data item */
	struct data *data;
	struct typeinfo *types;  /* types present, ascending */
	size_t ntypes;
	json_t *raw_types;       /* the item type table as stored */
	char *header;            /* header.json */
	size_t header_len;
	uint32_t items_dir, data_dir;
	struct twm *map;         /* the map view, or NULL */
};

/* The extended type named by `name` (e.g. "mapitemtype-envpoints-bezier@
 * ddnet.tw"), or -1 when the map has none. */
int sv_df_ext_type(const struct df *d, const char *name);

/* Data item i, inflated, as a new blob (at most `max` bytes inflated:
 * -EFBIG past it).  -EBADMSG with the reason for a broken item. */
int sv_df_data(struct sv_container *c, const struct df *d, int32_t i, uint64_t max,
	       struct sv_blob **out, struct sv_err *err);

#endif
