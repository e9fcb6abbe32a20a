/*
 * changes.h - records the nodes a commit reports as changed (the
 * sv_changed_fn callback), for the unit tests of the formats.
 *
 *   struct changes ch = {0};
 *   sv_commit(c, on_change, &ch, &err);
 *   T_OK(changed(&ch, node));
 *
 * The first 256 reports are kept; not thread-safe.
 */
#ifndef CHANGES_H
#define CHANGES_H

#include <stdbool.h>
#include <stdint.h>

struct changes {
	uint32_t node[256];
	int n;
};

static inline void on_change(void *arg, uint32_t node, uint32_t parent, const char *name,
			     bool gone)
{
	struct changes *ch = arg;
	if (ch->n < 256)
		ch->node[ch->n++] = node;
	(void)parent;
	(void)name;
	(void)gone;
}

static inline bool changed(const struct changes *ch, uint32_t n)
{
	for (int i = 0; i < ch->n; i++)
		if (ch->node[i] == n)
			return true;
	return false;
}

#endif
