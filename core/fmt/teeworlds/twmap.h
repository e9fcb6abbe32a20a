/*
 * twmap.h - the map view of a Teeworlds/DDNet datafile (map/): images,
 * sounds, envelopes, groups, layers and their tile grids, decoded from the
 * items the raw view shows, and edits of them re-encoded into those items.
 */
#ifndef SV_TWMAP_H
#define SV_TWMAP_H

#include "datafile_priv.h"

/* Reads the map's items (and the short strings naming images and sounds)
 * and adds map/ to the tree.  A datafile that is not a map (no version
 * item) gets no map/.  Problems of one item mark its views bad, with a
 * warning.  0 or -ENOMEM. */
int sv_twm_build(struct sv_container *c, struct df *d);
void sv_twm_free(struct twm *m);

/* The content of a map/ file node. */
int sv_twm_load(struct sv_container *c, const struct df *d, uint32_t node,
		struct sv_blob **out, struct sv_err *err);

/* Checks an edit of a map/ file before it is committed: -EINVAL (with the
 * reason) for what the game's loader would refuse. */
int sv_twm_check(struct sv_container *c, const struct df *d, uint32_t node,
		 const uint8_t *p, size_t len, struct sv_err *err);

/* What the map view's edits change: new payloads for items (by item
 * index), new contents for data items (by index), and data items to add
 * at the end.  Owned by the caller after sv_twm_commit; free with
 * sv_twm_out_fini. */
struct sv_twm_out {
	struct sv_buf *item;   /* [num_items]; set[i] says whether item i changes */
	bool *item_set;
	struct sv_buf *data;   /* [num_data] */
	bool *data_set;
	struct sv_buf *added;  /* new data items, appended in order */
	size_t nadded;
	size_t nitems, ndata;
	bool new_info;         /* item[nitems] is an info item the map lacked
				* (type 1, id 0), to be added */
};
void sv_twm_out_fini(struct sv_twm_out *o);

/* Applies every complete edit of a map/ view to o (allocated here).  An
 * edit of a map view and of a raw item or data item it also changes, in
 * one commit, is refused (-EBUSY).  Nodes of other views whose content
 * the edits change are touched. */
int sv_twm_commit(struct sv_container *c, const struct df *d, struct sv_twm_out *o,
		  struct sv_err *err);

#endif
