/*
 * datafile.h - the Teeworlds/DDNet datafile writer, shared by write-back,
 * the fixture and benchmark generators, and the tests.
 */
#ifndef SV_DATAFILE_H
#define SV_DATAFILE_H

#include "format.h"

/* One item: its type, id and int32 payload (len a multiple of 4). */
struct sv_df_witem {
	uint16_t type, id;
	const uint8_t *p;
	uint32_t len;
};

/*
 * One data item, either raw bytes (compressed with zlib on the way out for
 * version 4) or bytes already stored in another datafile, copied as they
 * are: `len` bytes at `off` of `fd`, whose uncompressed size is raw_size.
 */
struct sv_df_wdata {
	const uint8_t *raw;
	uint32_t raw_len;
	bool stored;
	int fd;
	uint64_t off;
	uint32_t len;
	int32_t raw_size;
};

struct sv_df_spec {
	char magic[4];       /* "DATA" or "ATAD" */
	int version;         /* 3 or 4 */
	bool crude_size;     /* write the old writers' short size/swaplen */
	const struct sv_df_witem *items;
	size_t nitems;
	const struct sv_df_wdata *data;
	size_t ndata;
	int level;           /* zlib level for raw data (-1 = default) */
};

/*
 * Writes a complete datafile to fd (at its current position).  Items are
 * grouped by type in ascending type order, keeping their order within a
 * type; the item type table is derived from them.  0 or -errno with a
 * reason: -EINVAL for an item whose length is not a multiple of 4, -EFBIG
 * when a section would overflow the format's int32 fields.
 */
int sv_df_write(int fd, const struct sv_df_spec *spec, struct sv_err *err);

#endif
