/*
 * meta.c - the files the core makes itself: /.savefs/info (JSON: format,
 * counts, warnings, cache) and /.savefs/log (what log.c keeps, newest
 * last), and the log line of a node's failure.
 */
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- meta files -------------------------------------------------------- */

struct msize {
	struct sv_container *c;
	uint64_t total;
};

static int add_member(void *arg, const char *name)
{
	struct msize *m = arg;
	struct stat st;
	if (!sv_member_stat(m->c, name, &st, NULL))
		m->total += (uint64_t)st.st_size;
	return 0;
}

/* The container's size: a file's, or the total of a directory's member
 * files (a directory's own size says nothing of what it holds). */
static uint64_t container_size(struct sv_container *c)
{
	if (!sv_container_is_dir(c))
		return sv_container_size(c);
	struct msize m = {c, 0};
	sv_member_list(c, add_member, &m, NULL);
	return m.total;
}

static int info_json(struct sv_container *c, struct sv_blob **out)
{
	json_t *o = json_object();
	if (!o)
		return -ENOMEM;
	/* What the mount shows below its root, /.savefs/ aside (the entries
	 * of a lazy directory once it was first listed; an index directory's
	 * from the format's index), and the nodes made for them now. */
	uint64_t files = 0, dirs = 0, nodes = 0;
	SV_EACH_NODE(c, i, 1) {
		const struct sv_inode *n = &c->nodes[i];
		if (n->flags & (SV_N_GONE | SV_N_META) || i == c->meta_dir)
			continue;
		nodes++;
		if ((c->nodes[n->parent].flags & SV_N_INDEXDIR) && SV_FMT(c->fmt, dirs, list) &&
		    !(n->flags & (SV_N_NEW | SV_N_TEMP)))
			continue; /* counted from the index below */
		if (n->flags & SV_N_DIR)
			dirs++;
		else
			files++;
		if ((n->flags & SV_N_INDEXDIR) && SV_FMT(c->fmt, dirs, count)) {
			SV_FMT(c->fmt, dirs, count)(c, i, &files, &dirs);
		} else if ((n->flags & SV_N_INDEXDIR) && SV_FMT(c->fmt, dirs, list)) {
			char name[256];
			bool is_dir;
			for (uint64_t pos = 0, at; !SV_FMT(c->fmt, dirs, list)(c, i, pos, name, &is_dir, &at);
			     pos = at + 1) {
				if (is_dir)
					dirs++;
				else
					files++;
				sv_tab_note(1); /* a step through the index */
			}
		}
	}
	/* A known point: what counting touched of the spilled arrays. */
	sv_tab_note(SV_TAB_LOOK_EVERY);
	json_object_set_new(o, "format", json_string(c->fmt->name));
	json_object_set_new(o, "description", json_string(c->fmt->description));
	json_object_set_new(o, "container", json_string(c->path));
	json_object_set_new(o, "container_size", json_integer((json_int_t)container_size(c)));
	json_object_set_new(o, "read_only", json_boolean(c->read_only));
	json_object_set_new(o, "fingerprinted", json_boolean(sv_guard_fingerprinted(c)));
	json_object_set_new(o, "files", json_integer((json_int_t)files));
	json_object_set_new(o, "directories", json_integer((json_int_t)dirs));
	json_object_set_new(o, "nodes", json_integer((json_int_t)nodes));
	if (c->fmt->info)
		c->fmt->info(c, o);
	json_t *w = json_array();
	pthread_mutex_lock(&c->log_lock);
	for (size_t i = 0; i < c->nwarnings; i++)
		json_array_append_new(w, json_string(c->warnings[i]));
	pthread_mutex_unlock(&c->log_lock);
	json_object_set_new(o, "warnings", w);
	struct sv_cache_stats cs;
	sv_cache_stats(c->cache, &cs);
	json_t *cj = json_object();
	json_object_set_new(cj, "cap", json_integer((json_int_t)cs.cap));
	json_object_set_new(cj, "bytes", json_integer((json_int_t)cs.bytes));
	json_object_set_new(cj, "entries", json_integer((json_int_t)cs.entries));
	json_object_set_new(cj, "hits", json_integer((json_int_t)cs.hits));
	json_object_set_new(cj, "misses", json_integer((json_int_t)cs.misses));
	json_object_set_new(cj, "evictions", json_integer((json_int_t)cs.evictions));
	pthread_mutex_lock(&c->pf_lock);
	json_object_set_new(cj, "read_ahead", json_integer((json_int_t)c->pf_decoded));
	pthread_mutex_unlock(&c->pf_lock);
	json_object_set_new(o, "cache", cj);
	/* The indexes that left the heap, in every container this daemon
	 * serves (they share the one mechanism). */
	struct sv_tab_stats ts;
	sv_tab_stats(&ts);
	json_t *tj = json_object();
	json_object_set_new(tj, "arrays", json_integer((json_int_t)ts.arrays));
	json_object_set_new(tj, "bytes", json_integer((json_int_t)ts.bytes));
	json_object_set_new(tj, "sheds", json_integer((json_int_t)ts.sheds));
	json_object_set_new(o, "spilled", tj);
	json_object_set_new(o, "kept", sv_kept_json());
	/* Where the bytes came from, and for an object on a server what
	 * reading them cost. */
	json_t *sj = json_object();
	json_object_set_new(sj, "kind", json_string(c->src->ops->kind));
	if (c->src->ops->remote) {
		json_object_set_new(sj, "requests", json_integer((json_int_t)__atomic_load_n(
			&c->src->requests, __ATOMIC_RELAXED)));
		json_object_set_new(sj, "fetched", json_integer((json_int_t)__atomic_load_n(
			&c->src->fetched, __ATOMIC_RELAXED)));
	}
	json_object_set_new(o, "source", sj);
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	size_t len = strlen(s);
	*out = sv_blob_new(len + 1);
	if (*out) {
		memcpy((*out)->data, s, len);
		(*out)->data[len] = '\n';
	}
	free(s);
	return *out ? 0 : -ENOMEM;
}

static int log_text(struct sv_container *c, struct sv_blob **out)
{
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = 0;
	pthread_mutex_lock(&c->log_lock);
	size_t start = (c->log_next + LOG_LINES - c->log_count) % LOG_LINES;
	for (size_t i = 0; i < c->log_count && !rc; i++)
		rc = sv_buf_printf(&b, "%s\n", c->log[(start + i) % LOG_LINES]);
	pthread_mutex_unlock(&c->log_lock);
	if (!rc) {
		*out = sv_blob_dup(b.p, b.len);
		rc = *out ? 0 : -ENOMEM;
	}
	sv_buf_fini(&b);
	return rc;
}

int sv_meta_content(struct sv_container *c, uint32_t n, struct sv_blob **out)
{
	return n == c->meta_info ? info_json(c, out) : log_text(c, out);
}

/* ---- open and close ---------------------------------------------------- */

int sv_add_meta(struct sv_container *c)
{
	c->meta_dir = sv_node_add(c, SV_ROOT, ".savefs", SV_N_DIR | SV_N_RO, 0, 0);
	if (c->meta_dir == SV_NONE)
		return -ENOMEM;
	c->meta_info = sv_node_add(c, c->meta_dir, "info", SV_N_RO | SV_N_META, 0, 0);
	c->meta_log = sv_node_add(c, c->meta_dir, "log", SV_N_RO | SV_N_META, 0, 0);
	return c->meta_info == SV_NONE || c->meta_log == SV_NONE ? -ENOMEM : 0;
}

void sv_log_failure(struct sv_container *c, uint32_t i, const char *what,
			const struct sv_err *err)
{
	char path[4096];
	if (sv_path_locked(c, i, path, sizeof path))
		snprintf(path, sizeof path, "node %u", i);
	sv_log(c, "%s %s: %s", what, path, err->msg[0] ? err->msg : strerror(-err->code));
}
