/*
 * nodes.c - the node table: an array indexed by node number, never shrunk,
 * so numbers are stable; node 0 is the root.  A number is given again only
 * for an index directory's entry whose node the client forgot (a free
 * list of such numbers).  Names are found through a
 * chained hash of (parent, name) threaded through sv_inode.hnext.  Names
 * from containers are made valid and unique here.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- node table -------------------------------------------------------- */

static uint32_t name_hash(uint32_t parent, const char *name)
{
	uint32_t h = 2166136261u ^ parent;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h ^ (h >> 15);
}

static int rehash(struct sv_container *c, uint32_t size)
{
	uint32_t *t = malloc(size * sizeof *t);
	if (!t)
		return -ENOMEM;
	memset(t, 0xff, size * sizeof *t);
	SV_EACH_NODE(c, i, 1) {
		struct sv_inode *n = &c->nodes[i];
		if (n->flags & SV_N_GONE)
			continue;
		uint32_t h = name_hash(n->parent, n->name) & (size - 1);
		n->hnext = t[h];
		t[h] = i;
	}
	free(c->htab);
	c->htab = t;
	c->hsize = size;
	return 0;
}

void sv_hash_insert(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	uint32_t h = name_hash(n->parent, n->name) & (c->hsize - 1);
	n->hnext = c->htab[h];
	c->htab[h] = i;
}

void sv_hash_remove(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	uint32_t *pp = &c->htab[name_hash(n->parent, n->name) & (c->hsize - 1)];
	while (*pp != SV_NONE) {
		if (*pp == i) {
			*pp = n->hnext;
			break;
		}
		pp = &c->nodes[*pp].hnext;
	}
	n->hnext = SV_NONE;
}

/* Finds a live child by name, or SV_NONE. */
uint32_t sv_find_child(struct sv_container *c, uint32_t parent,
		       const char *name)
{
	uint32_t i = c->htab[name_hash(parent, name) & (c->hsize - 1)];
	uint64_t steps = 1;
	while (i != SV_NONE) {
		struct sv_inode *n = &c->nodes[i];
		if (n->parent == parent && !(n->flags & SV_N_GONE) &&
		    !strcmp(n->name, name))
			break;
		i = n->hnext;
		steps++;
	}
	__atomic_add_fetch(&c->name_steps, steps, __ATOMIC_RELAXED);
	return i;
}

int sv_kid_add(struct sv_container *c, struct sv_inode *d, uint32_t k)
{
	if (d->nkids == d->capkids) {
		uint32_t cap = d->capkids ? d->capkids * 2 : 8;
		uint32_t *p = realloc(d->kids, cap * sizeof *p);
		if (!p)
			return -ENOMEM;
		d->kids = p;
		d->capkids = cap;
	}
	d->kids[d->nkids++] = k;
	d->nsubdirs += (c->nodes[k].flags & SV_N_DIR) != 0;
	return 0;
}

/* Keeps each child's kidpos equal to its index in the parent's list. */
void sv_renumber_kids(struct sv_container *c, struct sv_inode *d, uint32_t from)
{
	for (uint32_t i = from; i < d->nkids; i++)
		c->nodes[d->kids[i]].kidpos = i;
}

void sv_kid_remove(struct sv_container *c, struct sv_inode *d, uint32_t k)
{
	uint32_t i = c->nodes[k].kidpos;
	if (i >= d->nkids || d->kids[i] != k)
		return;
	memmove(&d->kids[i], &d->kids[i + 1], (d->nkids - i - 1) * sizeof *d->kids);
	d->nkids--;
	d->nsubdirs -= (c->nodes[k].flags & SV_N_DIR) != 0;
	sv_renumber_kids(c, d, i);
}

/* Copies name into out (cap bytes, at least 16) with control characters
 * written as \xHH, so that a listing stays one name a line, and with '/'
 * as '_' when `slash`; at most 200 bytes of the name are taken. */
static void escape_name(const char *name, char *out, size_t cap, bool slash)
{
	size_t k = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p && k + 5 < cap && k < 200;
	     p++) {
		if (*p < 0x20 || *p == 0x7f)
			k += (size_t)snprintf(out + k, cap - k, "\\x%02x", *p);
		else
			out[k++] = *p == '/' && slash ? '_' : (char)*p;
	}
	out[k] = '\0';
}

/* A new node's declared fields (its name set, the rest zero). */
static void node_fill(struct sv_inode *n, uint32_t parent, uint32_t flags, uint64_t size,
		      uint64_t key)
{
	n->parent = parent;
	n->flags = flags;
	n->size = n->stored_size = size;
	n->key = key;
	n->hnext = SV_NONE;
	n->listpos = UINT64_MAX;
	sv_buf_init(&n->pending);
}

/* Creates a fresh node; returns its number or SV_NONE. */
uint32_t sv_node_new(struct sv_container *c, uint32_t parent,
		     const char *name, uint32_t flags, uint64_t size,
		     uint64_t key)
{
	if (c->reuse && c->nfreed) {
		/* A number the client forgot, for an index directory's entry
		 * looked up anew: its generation goes on from the old node's,
		 * so nothing cached of that one is taken for this one. */
		uint32_t i = c->freed[--c->nfreed];
		struct sv_inode *n = &c->nodes[i];
		uint32_t gen = n->gen + 1;
		memset(n, 0, sizeof *n);
		n->gen = gen;
		n->name = strdup(name);
		if (!n->name || sv_kid_add(c, &c->nodes[parent], i)) {
			free(n->name);
			n->name = NULL;
			n->flags = SV_N_GONE | SV_N_FREE;
			c->freed[c->nfreed++] = i;
			return SV_NONE;
		}
		node_fill(n, parent, flags, size, key);
		n->kidpos = c->nodes[parent].nkids - 1;
		sv_hash_insert(c, i);
		return i;
	}
	if (c->nnodes == UINT32_MAX - 1)
		return SV_NONE;
	if (c->nnodes == c->cap) {
		/* In a file past the spill threshold (tab.c): a long game's
		 * states looked up faster than the kernel is told to forget
		 * them hold their nodes in the arrays' window, not the heap. */
		size_t cap = c->cap;
		if (sv_tab_grow((void **)&c->nodes, &cap, (size_t)c->nnodes + 1, sizeof *c->nodes))
			return SV_NONE;
		c->cap = cap < UINT32_MAX ? (uint32_t)cap : UINT32_MAX;
	}
	if (c->nnodes + 1 > c->hsize / 2 && rehash(c, c->hsize * 2))
		return SV_NONE;
	uint32_t i = c->nnodes;
	struct sv_inode *n = &c->nodes[i];
	memset(n, 0, sizeof *n);
	n->name = strdup(name);
	if (!n->name)
		return SV_NONE;
	node_fill(n, parent, flags, size, key);
	if (i != SV_ROOT && sv_kid_add(c, &c->nodes[parent], i)) {
		free(n->name);
		return SV_NONE;
	}
	n->kidpos = i != SV_ROOT ? c->nodes[parent].nkids - 1 : 0;
	c->nnodes++;
	if (i != SV_ROOT)
		sv_hash_insert(c, i);
	return i;
}

uint32_t sv_make_entry(struct sv_container *c, uint32_t dir, const char *name)
{
	uint32_t n = sv_find_child(c, dir, name);
	if (n != SV_NONE || !SV_FMT(c->fmt, dirs, lookup))
		return n;
	struct sv_err e;
	sv_err_clear(&e);
	bool index = (c->nodes[dir].flags & SV_N_INDEXDIR) != 0;
	c->reuse = index;
	sv_source_tree_begin();
	int rc = SV_FMT(c->fmt, dirs, lookup)(c, dir, name, &e);
	sv_source_tree_end();
	c->reuse = false;
	n = rc ? SV_NONE : sv_find_child(c, dir, name);
	if (n != SV_NONE && index)
		sv_node_evictable(c, n);
	return n;
}

/* About what a node costs: its slot, name, hash and list slots. */
#define NODE_BYTES 256

/* The nodes a container keeps for its index directories' entries: a
 * 1/1024th of the cache cap in nodes (a quarter of the cap in memory),
 * fewer as the cache fills (the two share the cap), at least 4,096. */
uint32_t sv_node_budget(const struct sv_container *c)
{
	uint64_t cap = c->opts.cache_cap, budget = cap / 1024;
	if (c->cache) {
		struct sv_cache_stats st;
		sv_cache_stats(c->cache, &st);
		uint64_t room = st.bytes < cap ? (cap - st.bytes) / NODE_BYTES : 0;
		if (room < budget)
			budget = room;
	}
	return budget > 4096 ? (budget < UINT32_MAX ? (uint32_t)budget : UINT32_MAX) : 4096;
}

bool sv_node_room(const struct sv_container *c)
{
	return c->nnodes - c->nfreed < sv_node_budget(c);
}

/* Whether made entry s is still the node it was, an index directory's
 * entry nothing but the client's lookups keeps. */
static bool evictee_live(struct sv_container *c, struct sv_evictee s)
{
	if (s.node >= c->nnodes || c->nodes[s.node].gen != s.gen)
		return false;
	const struct sv_inode *n = &c->nodes[s.node];
	return s.node != SV_ROOT &&
	       !(n->flags & (SV_N_GONE | SV_N_META | SV_N_NEW | SV_N_TEMP | SV_N_DIRTY |
			     SV_N_ORPHAN | SV_N_STALE)) &&
	       (c->nodes[n->parent].flags & SV_N_INDEXDIR) && !n->nkids;
}

static bool evict_push(struct sv_container *c, struct sv_evictee s)
{
	if (c->nevict >= c->capevict / 4 * 3 || (c->evict_head && c->evict_head >= c->nevict / 2)) {
		/* What was popped goes, and with it the entries whose node
		 * went meanwhile (forgotten, removed): under the budget
		 * nothing is popped, and a mount whose client forgets what it
		 * looked up would otherwise keep an entry for every lookup. */
		size_t k = 0;
		for (size_t i = c->evict_head; i < c->nevict; i++)
			if (evictee_live(c, c->evict[i]))
				c->evict[k++] = c->evict[i];
		c->evict_head = 0;
		c->nevict = k;
		/* Room for twice what is left: the next pass comes a quarter
		 * of the array's worth of pushes or pops later at least. */
		if (sv_grow((void **)&c->evict, &c->capevict, 2 * k + 1, sizeof *c->evict))
			return false;
	}
	c->evict[c->nevict++] = s;
	return true;
}

void sv_node_evictable(struct sv_container *c, uint32_t k)
{
	if (!evict_push(c, (struct sv_evictee){k, c->nodes[k].gen}))
		return; /* it stays until the client forgets it */
	if (!c->notify)
		return;
	/* (The budget is 4,096 at least: a small container never asks the
	 * cache how full it is.) */
	uint32_t live = c->nnodes - c->nfreed;
	if (live <= 4096)
		return;
	uint32_t budget = sv_node_budget(c);
	if (live <= budget)
		return;
	uint32_t dir = c->nodes[k].parent;
	if (c->told > budget / 2 && dir != SV_ROOT) {
		/* Told one by one, the entries go only as fast as the
		 * client leaves the directory idle for the telling (it takes
		 * the directory's lock), and a client looking up one entry
		 * after another (ls -l of a game's states) leaves it idle
		 * between two lookups only: on a busy machine the telling
		 * falls behind and the nodes pile up.  The directory's own
		 * name, told in its parent (idle meanwhile), drops them all:
		 * the client prunes every entry below it that nothing uses
		 * and forgets them.  (Not always: a shell whose working
		 * directory it is finds it gone, getcwd() fails, until its
		 * path is looked up again.) */
		if (++c->made_over >= budget / 8) {
			c->made_over = 0;
			c->notify(c->notify_arg, dir, c->nodes[dir].parent, c->nodes[dir].name,
				  true);
		}
		return;
	}
	/* One goes for the one made, two while the budget is an eighth or
	 * more off (it fell as the cache filled), so that the nodes come
	 * down to it; the client's forgets of those told come later.  The
	 * one just made, one open and one not held yet (made ahead of the
	 * client's lookup) go to the back, to be told when their turn comes
	 * again. */
	int go = live - budget > budget / 8 ? 2 : 1;
	for (size_t tries = c->nevict - c->evict_head; go && tries && c->evict_head < c->nevict;
	     tries--) {
		struct sv_evictee s = c->evict[c->evict_head++];
		if (!evictee_live(c, s))
			continue;
		struct sv_inode *n = &c->nodes[s.node];
		if (s.node == k || __atomic_load_n(&n->opens, __ATOMIC_ACQUIRE) ||
		    !__atomic_load_n(&n->held, __ATOMIC_ACQUIRE)) {
			if (!evict_push(c, s))
				return;
			continue;
		}
		c->notify(c->notify_arg, s.node, n->parent, n->name, true);
		if (!n->told) {
			n->told = 1;
			c->told++;
		}
		go--;
	}
}

bool sv_node_forgettable(struct sv_container *c, uint32_t i)
{
	const struct sv_inode *n = &c->nodes[i];
	return i != SV_ROOT && i < c->nnodes &&
	       !(n->flags & (SV_N_GONE | SV_N_META | SV_N_NEW | SV_N_TEMP | SV_N_DIRTY |
			     SV_N_ORPHAN | SV_N_STALE)) &&
	       (c->nodes[n->parent].flags & SV_N_INDEXDIR) && !n->nkids &&
	       !__atomic_load_n(&n->held, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE);
}

void sv_node_untold(struct sv_container *c, uint32_t i)
{
	if (c->nodes[i].told) {
		c->nodes[i].told = 0;
		c->told--;
	}
}

void sv_node_free(struct sv_container *c, uint32_t i)
{
	struct sv_inode *n = &c->nodes[i];
	struct sv_inode *d = &c->nodes[n->parent];
	sv_hash_remove(c, i);
	/* An index directory's kids are in no order that matters (its
	 * listing is the format's): the last takes the place, so that the
	 * kernel forgetting 100,000 entries costs 100,000 steps, not their
	 * square. */
	uint32_t pos = n->kidpos;
	if (pos < d->nkids && d->kids[pos] == i) {
		uint32_t last = d->kids[--d->nkids];
		if (last != i) {
			d->kids[pos] = last;
			c->nodes[last].kidpos = pos;
		}
		d->nsubdirs -= (n->flags & SV_N_DIR) != 0;
	}
	free(n->name);
	n->name = NULL;
	free(n->kids);
	n->kids = NULL;
	n->nkids = n->capkids = n->nsubdirs = 0;
	sv_buf_fini(&n->pending);
	sv_node_untold(c, i);
	n->flags = SV_N_GONE | SV_N_FREE;
	n->size = n->stored_size = 0;
	n->group = 0;
	n->gen++;
	if (c->nfreed == c->capfreed) {
		uint32_t cap = c->capfreed ? c->capfreed * 2 : 64;
		uint32_t *p = realloc(c->freed, cap * sizeof *p);
		if (!p)
			return; /* the number stays unused */
		c->freed = p;
		c->capfreed = cap;
	}
	c->freed[c->nfreed++] = i;
}

/* Whether f is a kind of node and modifiers (format.h); meta files are
 * the core's own, added through here too. */
static bool flags_ok(uint32_t f)
{
	static const uint32_t kinds[] = {
		SV_KIND_FILE, SV_KIND_SIZED_LATER, SV_KIND_DECODED_ON_STAT, SV_KIND_STREAM,
		SV_KIND_STREAM_SIZED_LATER, SV_KIND_STREAM_SIZED_ON_STAT,
		SV_KIND_STREAM_SIZE_AWAITED, SV_KIND_DIRECT, SV_KIND_LOG, SV_KIND_DIR, SV_KIND_LAZYDIR,
		SV_KIND_INDEXDIR, SV_KIND_INDEXDIR_NODES,
	};
	if (f & ~(uint32_t)(SV_N_DECLARED | SV_N_META))
		return false;
	if (((f & SV_N_REMOVABLE) && !(f & SV_N_RO)) || ((f & SV_N_DIR) && (f & SV_N_UNLISTED)))
		return false;
	uint32_t kind = f & ~(uint32_t)(SV_N_MODIFIERS | SV_N_META);
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		if (kind == kinds[i])
			return true;
	return false;
}

/* Node i, stale since the commit, found again by the re-index: it keeps
 * its number, and takes the new key, flags and size. */
static uint32_t refind(struct sv_container *c, uint32_t i, uint32_t flags, uint64_t size,
		       uint64_t key)
{
	struct sv_inode *n = &c->nodes[i];
	if ((flags & SV_N_LAZYDIR) && n->nkids)
		c->relist = true; /* listed before: the re-index lists it again */
	n->key = key;
	n->dupnext = 0;
	n->stored_size = size;
	if ((n->flags & SV_N_DIRTY) && !(n->flags & SV_N_READY)) {
		/* An edit still being written (its file is open): it stays
		 * pending, on top of the new stored content. */
		n->flags = flags | SV_N_DIRTY;
		return i;
	}
	/* A lazily sized node's size is not known here: it changed only if
	 * the format says so (a touch), and else keeps the size its first
	 * stat found. */
	bool lazy = flags & SV_N_LAZYSIZE;
	bool changed = (!lazy && n->size != size) ||
		       (n->flags & (SV_N_DIRTY | SV_N_NEW | SV_N_DERIVED |
				    SV_N_TOUCHED)) ||
		       (flags & SV_N_DERIVED);
	bool keep = lazy && !changed && (n->flags & SV_N_LAZYSIZE) &&
		    __atomic_load_n(&n->sized, __ATOMIC_ACQUIRE);
	n->flags = flags;
	if (!keep) {
		__atomic_store_n(&n->sized, 0, __ATOMIC_RELEASE);
		/* A stream shows its last known size until the new one is
		 * found (it grows; it never reads as empty). */
		if ((flags & (SV_N_STREAM | SV_N_LAZYSIZE)) != (SV_N_STREAM | SV_N_LAZYSIZE))
			n->size = size;
	}
	if (changed)
		n->gen++;
	sv_buf_fini(&n->pending);
	return i;
}

void sv_node_listed(struct sv_container *c, uint32_t n, uint64_t pos)
{
	if (n < c->nnodes && sv_live(c, n))
		c->nodes[n].listpos = pos;
}

uint32_t sv_node_again(struct sv_container *c, uint32_t was, uint32_t parent,
		       const char *name, uint32_t flags, uint64_t size, uint64_t key)
{
	if (sv_node_again_finds(c, was, parent, name) && !((c->nodes[was].flags ^ flags) & SV_N_DIR) &&
	    flags_ok(flags))
		return refind(c, was, flags, size, key);
	return sv_node_add(c, parent, name, flags, size, key);
}

bool sv_node_again_finds(struct sv_container *c, uint32_t was, uint32_t parent,
			 const char *name)
{
	const struct sv_inode *n = was < c->nnodes ? &c->nodes[was] : NULL;
	/* Stale, or found again earlier in this re-index (a format that
	 * began to update a tree and then builds it whole). */
	return c->reindexing && n && was != SV_ROOT &&
	       !(n->flags & (SV_N_GONE | SV_N_TEMP | SV_N_META)) && n->parent == parent &&
	       n->name && !strcmp(n->name, name);
}

int sv_node_keep_rest(struct sv_container *c)
{
	if (!c->reindexing)
		return -EINVAL;
	/* What the commit wrote was marked at the re-index's start.  An index
	 * directory's entries are asked for again by name after rebuild(),
	 * and stay stale until then. */
	for (uint32_t i = 1; i < c->nedited; i++)
		if (c->edited[i] && (c->nodes[i].flags & (SV_N_STALE | SV_N_GONE)) == SV_N_STALE &&
		    !(c->nodes[c->nodes[i].parent].flags & SV_N_INDEXDIR))
			return -EAGAIN;
	/* (A removal the commit made stays stale: it goes.) */
	SV_EACH_NODE(c, i, 1)
		if (!(c->nodes[i].flags & SV_N_GONE) &&
		    !(c->nodes[c->nodes[i].parent].flags & SV_N_INDEXDIR))
			c->nodes[i].flags &= ~SV_N_STALE;
	return 0;
}

uint32_t sv_node_add(struct sv_container *c, uint32_t parent, const char *name,
		     uint32_t flags, uint64_t size, uint64_t key)
{
	char fixed[300];
	if (parent >= c->nnodes || !(c->nodes[parent].flags & SV_N_DIR))
		return SV_NONE;
	if (!flags_ok(flags)) {
		sv_log(c, "the format declared \"%s\" with flags 0x%x that do not go together: "
		       "left out", name, flags);
		return SV_NONE;
	}
	if (!sv_name_ok(name)) {
		escape_name(name, fixed, sizeof fixed, true);
		size_t k = strlen(fixed);
		if (!k || !strcmp(fixed, ".") || !strcmp(fixed, ".."))
			snprintf(fixed + k, sizeof fixed - k, "_");
		if (!c->reindexing) {
			char shown[300];
			escape_name(name, shown, sizeof shown, false);
			sv_log(c, "name \"%s\" is not a valid file name: shown as \"%s\"",
			       shown, fixed);
		}
		name = fixed;
	}
	uint32_t i = sv_find_child(c, parent, name);
	if (i != SV_NONE && c->reindexing && (c->nodes[i].flags & SV_N_STALE))
		return refind(c, i, flags, size, key);
	if (i != SV_NONE) {
		/* Taken: make the name unique with a stable suffix. */
		char alt[320];
		/* The holder of the name remembers the next suffix to try, so a
		 * thousand duplicates cost a thousand lookups, not a million. */
		uint32_t owner = i;
		unsigned k = c->nodes[owner].dupnext > 2 ? c->nodes[owner].dupnext : 2;
		for (;; k++) {
			sv_dup_name(alt, sizeof alt, name, k);
			uint32_t other = sv_find_child(c, parent, alt);
			/* While re-indexing, a stale node of that name is this one. */
			if (other == SV_NONE ||
			    (c->reindexing && (c->nodes[other].flags & SV_N_STALE)))
				break;
		}
		c->nodes[owner].dupnext = k + 1;
		if (!c->reindexing)
			sv_log(c, "duplicate name \"%s\": shown as \"%s\"", name, alt);
		return sv_node_add(c, parent, alt, flags, size, key);
	}
	return sv_node_new(c, parent, name, flags, size, key);
}

void sv_node_touch(struct sv_container *c, uint32_t n)
{
	if (n < c->nnodes)
		c->nodes[n].flags |= SV_N_TOUCHED;
}

void sv_node_set_group(struct sv_container *c, uint32_t n, uint64_t group)
{
	if (n < c->nnodes)
		c->nodes[n].group = group;
}

void sv_group_touch(struct sv_container *c, uint64_t group)
{
	sv_u64set_add(&c->tgroups, group);
}


struct sv_node *sv_node(struct sv_container *c, uint32_t n)
{
	return n < c->nnodes ? &c->nodes[n].pub : NULL;
}

uint32_t sv_node_state(struct sv_container *c, uint32_t n)
{
	return n < c->nnodes ? c->nodes[n].flags & (SV_S_META | SV_S_TEMP | SV_S_NEW | SV_S_GONE |
						     SV_S_DIRTY | SV_S_STALE) : 0;
}

uint32_t sv_node_count(const struct sv_container *c)
{
	return c->nnodes;
}

size_t sv_container_evict_queued(const struct sv_container *c)
{
	return c->nevict - c->evict_head;
}

uint64_t sv_container_name_steps(const struct sv_container *c)
{
	return __atomic_load_n(&c->name_steps, __ATOMIC_RELAXED);
}

const struct sv_buf *sv_node_edit(struct sv_container *c, uint32_t n)
{
	if (n >= c->nnodes)
		return NULL;
	struct sv_inode *node = &c->nodes[n];
	return (node->flags & (SV_N_DIRTY | SV_N_NEW)) && (node->flags & SV_N_READY)
		       ? &node->pending : NULL;
}

bool sv_node_in_commit(struct sv_container *c, uint32_t n)
{
	if (n >= c->nnodes)
		return false;
	uint32_t f = c->nodes[n].flags;
	if (f & (SV_N_GONE | SV_N_TEMP | SV_N_DIR | SV_N_META))
		return false;
	return !(f & SV_N_NEW) || (f & SV_N_READY);
}



/* ---- which numbers are live --------------------------------------------- */

bool sv_live(struct sv_container *c, uint32_t n)
{
	return n < c->nnodes && !(c->nodes[n].flags & SV_N_GONE);
}

/* Live, or an orphan still open: what stat, read and write accept. */
bool sv_usable(struct sv_container *c, uint32_t n)
{
	return n < c->nnodes && (!(c->nodes[n].flags & SV_N_GONE) ||
				 (c->nodes[n].flags & SV_N_ORPHAN));
}

int sv_gone_code(struct sv_container *c, uint32_t n)
{
	if (sv_usable(c, n))
		return 0;
	/* A number the tree had: whoever holds it looked it up before the
	 * node was removed or replaced (a rename onto it, a commit), and
	 * should look its name up again (the kernel does, on ESTALE). */
	return n < c->nnodes ? -ESTALE : -ENOENT;
}

int sv_path_locked(struct sv_container *c, uint32_t n, char *buf,
		   size_t size)
{
	if (!sv_live(c, n))
		return -ENOENT;
	if (!size)
		return -ENAMETOOLONG;
	size_t pos = size;
	buf[--pos] = '\0';
	while (n != SV_ROOT) {
		const struct sv_inode *node = &c->nodes[n];
		size_t k = strlen(node->name);
		size_t slash = pos < size - 1 ? 1 : 0;
		if (k + slash > pos)
			return -ENAMETOOLONG;
		if (slash)
			buf[--pos] = '/';
		pos -= k;
		memcpy(buf + pos, node->name, k);
		n = node->parent;
	}
	memmove(buf, buf + pos, size - pos);
	return 0;
}

int sv_path(struct sv_container *c, uint32_t n, char *buf, size_t size)
{
	pthread_rwlock_rdlock(&c->lock);
	int rc = sv_path_locked(c, n, buf, size);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}
