/*
 * container.c - the format registry, opening a container (its source
 * opened, its format sniffed or given, its index read through the format,
 * the commit kind fixed for its layout) and closing it.
 */
#include "internal.h"

#include <assert.h>

#include <errno.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <libgen.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const struct sv_format sv_fmt_datafile;
extern const struct sv_format sv_fmt_doodle;
extern const struct sv_format sv_fmt_nethack;
extern const struct sv_format sv_fmt_btreedb5;
extern const struct sv_format sv_fmt_sbvj01;
extern const struct sv_format sv_fmt_recording;

const struct sv_format *const sv_formats[] = {
	&sv_fmt_datafile,
	&sv_fmt_doodle,
	&sv_fmt_nethack,
	&sv_fmt_btreedb5,
	&sv_fmt_sbvj01,
	&sv_fmt_recording,
	NULL,
};

const struct sv_format *sv_format_find(const char *name)
{
	for (size_t i = 0; sv_formats[i]; i++)
		if (!strcmp(sv_formats[i]->name, name))
			return sv_formats[i];
	return NULL;
}

/* ---- accessors --------------------------------------------------------- */

void sv_container_set_priv(struct sv_container *c, void *priv) { c->priv = priv; }
void *sv_container_priv(const struct sv_container *c) { return c->priv; }
const struct sv_opts *sv_container_opts(const struct sv_container *c) { return &c->opts; }
const struct sv_format *sv_container_format(const struct sv_container *c) { return c->fmt; }
const char *sv_format_name(const struct sv_format *f) { return f->name; }
const char *sv_format_description(const struct sv_format *f) { return f->description; }
const char *sv_container_path(const struct sv_container *c) { return c->path; }
bool sv_container_read_only(const struct sv_container *c) { return c->read_only; }
enum sv_commit_kind sv_container_commit_kind(const struct sv_container *c) { return c->commit; }

bool sv_format_option(const char *key, size_t len)
{
	for (size_t i = 0; sv_formats[i]; i++)
		if (sv_key_listed(sv_formats[i]->options, key, len))
			return true;
	return false;
}


static struct sv_index_key index_key(const struct sv_container *c, const char *what,
				     uint32_t version)
{
	struct sv_index_key k = {c->fmt->name, version, what, c->src->st};
	return k;
}

int sv_container_index_load(struct sv_container *c, const char *what, uint32_t version,
			    struct sv_blob **out)
{
	char dir[4096];
	*out = NULL;
	if (!sv_kept_dir(c, dir, sizeof dir))
		return -ENOENT;
	struct sv_index_key k = index_key(c, what, version);
	int rc = sv_index_load(dir, &k, c->opts.max_decode, out);
	return rc ? -ENOENT : 0;
}

void sv_container_index_store(struct sv_container *c, const char *what, uint32_t version,
			      const void *p, size_t n)
{
	struct iovec v = {(void *)p, n};
	sv_container_index_storev(c, what, version, &v, 1);
}

void sv_container_index_storev(struct sv_container *c, const char *what, uint32_t version,
			       const struct iovec *iov, int niov)
{
	char dir[4096];
	if (!sv_kept_dir(c, dir, sizeof dir))
		return;
	struct sv_index_key k = index_key(c, what, version);
	int rc = sv_index_storev(dir, &k, iov, niov, SV_INDEX_CAP);
	if (rc)
		sv_log(c, "the index of %s was not kept (%s): it is made again next time", what,
		       strerror(-rc));
}

int sv_format_opts_add(char **opts, const char *kv)
{
	size_t old = *opts ? strlen(*opts) : 0, k = strlen(kv);
	char *p = realloc(*opts, old + k + 2);
	if (!p)
		return -ENOMEM;
	if (old)
		p[old++] = ',';
	memcpy(p + old, kv, k + 1);
	*opts = p;
	return 0;
}

const char *sv_container_option(const struct sv_container *c, const char *key, size_t *len)
{
	const char *p = c->format_opts;
	size_t k = strlen(key);
	/* The last one given counts, as with any -o. */
	const char *found = NULL;
	while (p && *p) {
		size_t n = strcspn(p, ",");
		if (n > k && !memcmp(p, key, k) && p[k] == '=') {
			found = p + k + 1;
			*len = n - k - 1;
		}
		p += n + (p[n] == ',');
	}
	return found;
}

static int open_common(struct sv_container *c, const char *path,
		       const struct sv_opts *opts, struct sv_err *err);

static struct sv_container *alloc_container(const struct sv_opts *opts)
{
	struct sv_container *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->log_lock, NULL);
	pthread_mutex_init(&c->pf_lock, NULL);
	sv_pf_init(c);
	pthread_mutex_init(&c->ld_lock, NULL);
	pthread_cond_init(&c->ld_cond, NULL);
	pthread_mutex_init(&c->fp_lock, NULL);
	c->pf_dir = SV_NONE;
	c->pf_gdir = SV_NONE;
	c->fp_fd = -1;
	c->fp_drop = -1;
	c->opts = *opts;
	c->opts.format = NULL;
	c->opts.format_opts = NULL;
	c->format_opts = opts->format_opts ? strdup(opts->format_opts) : NULL;
	c->read_only = opts->read_only;
	return c;
}

const struct sv_format *sv_sniff_source(struct sv_source *src)
{
	struct sv_err err;
	/* Only the source is filled in: a probe reads bytes and members. */
	struct sv_container probe;
	memset(&probe, 0, sizeof probe);
	probe.src = src;
	const struct sv_format *fmt = NULL;
	if (sv_container_is_dir(&probe)) {
		for (size_t i = 0; sv_formats[i] && !fmt; i++)
			if (sv_formats[i]->probe_dir && sv_formats[i]->probe_dir(&probe))
				fmt = sv_formats[i];
	} else if (S_ISREG(src->st.st_mode)) {
		uint8_t head[64];
		size_t k = (uint64_t)src->st.st_size < sizeof head ? (size_t)src->st.st_size
								    : sizeof head;
		if (!sv_container_pread(&probe, 0, head, k, &err))
			for (size_t i = 0; sv_formats[i] && !fmt; i++)
				if (sv_formats[i]->probe(head, k))
					fmt = sv_formats[i];
	}
	return fmt;
}

const struct sv_format *sv_sniff(const char *path, const char *opts, int *why)
{
	struct sv_source *src = NULL;
	struct sv_err err;
	int ro = 0;
	*why = sv_source_open(path, opts, true, &src, &ro, &err);
	if (*why)
		return NULL;
	const struct sv_format *fmt = sv_sniff_source(src);
	sv_source_free(src);
	return fmt;
}

bool sv_container_idle(struct sv_container *c)
{
	/* Open files are counted; pending edits exist only where edits do. */
	if (__atomic_load_n(&c->opened, __ATOMIC_ACQUIRE))
		return false;
	if (c->read_only)
		return true;
	bool idle = true;
	/* A commit under way is not idle, and is never waited for. */
	if (pthread_rwlock_tryrdlock(&c->lock))
		return false;
	SV_EACH_NODE(c, i, 0) {
		if (c->nodes[i].flags & (SV_N_DIRTY | SV_N_NEW | SV_N_TEMP | SV_N_ORPHAN)) {
			idle = false;
			break;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return idle;
}

/* The source's log lines go to the container's log. */
static void source_log(void *arg, const char *line)
{
	sv_log(arg, "%s", line);
}

int sv_container_open(const char *path, const struct sv_opts *opts,
		      struct sv_container **out, struct sv_err *err)
{
	return sv_container_open_as(path, NULL, opts, out, err);
}

/* The container of a source opened (taken: freed on failure); why: the
 * errno that made a read-write open read-only, or 0.  *again: the open
 * failed on blocks the disk cache served, which were dropped (the caller
 * opens once more, from the server). */
static int open_source(struct sv_container *c, const char *path, int why,
		       const struct sv_opts *opts, struct sv_container **out, bool *again,
		       struct sv_err *err)
{
	c->read_only = c->src->read_only;
	int rc = open_common(c, path, opts, err);
	if (rc && rc != -ENOMEM && again && c->src->ops->forget &&
	    __atomic_load_n(&c->src->disk_hits, __ATOMIC_RELAXED)) {
		/* What the disk cache kept may be what failed (a record
		 * rewritten with its hash): dropped, never blamed on the
		 * object. */
		c->src->ops->forget(c->src);
		*again = true;
	}
	if (rc)
		goto fail;
	if (why && c->src->ops->read_only_why)
		sv_warn(c, "%s: %s: mounted read-only", c->path, c->src->ops->read_only_why);
	else if (why)
		sv_warn(c, "%s cannot be written (%s): mounted read-only", c->path, strerror(why));
	/* Lazily: at the first commit (sv_guard_lock). */
	c->prepared = !opts->lazy_prepare;
	if (!c->read_only && c->src->ops->prepare && !opts->lazy_prepare) {
		int e = c->src->ops->prepare(c->src);
		if (e) {
			sv_warn(c, "cannot create files beside the container (%s): mounted read-only",
				strerror(-e));
			c->read_only = true;
		}
	}
	if (!c->read_only) {
		rc = sv_guard_claim(c, !opts->read_only_if_held, err);
		if (rc == -EBUSY && opts->read_only_if_held) {
			/* Another savefs writes it (a second mount of the folder):
			 * read here, written there. */
			sv_warn(c, "%s: held read-write by another savefs mount: read-only here",
				c->path);
			sv_err_clear(err);
			c->read_only = true;
			rc = 0;
		}
		if (rc)
			goto fail;
		if (!c->read_only)
			sv_guard_fingerprint(c, false);
	}
	*out = c;
	return 0;
fail:
	sv_container_free(c);
	return rc;
}

static int open_as(const char *path, const struct sv_format *fmt, const struct sv_opts *opts,
		   struct sv_container **out, bool may_retry, struct sv_err *err)
{
	*out = NULL;
	struct sv_container *c = alloc_container(opts);
	if (!c)
		return sv_err_set(err, -ENOMEM, "out of memory");
	c->fmt = fmt;
	int why = 0; /* why a read-write open was refused */
	int rc = sv_source_open(path, opts->format_opts, opts->read_only, &c->src, &why, err);
	if (rc) {
		sv_container_free(c);
		return rc;
	}
	bool again = false;
	rc = open_source(c, path, why, opts, out, may_retry ? &again : NULL, err);
	if (rc && again) {
		/* Once more, every block from the server. */
		char first[SV_ERR_MAX];
		snprintf(first, sizeof first, "%s", err->msg);
		sv_err_clear(err);
		rc = open_as(path, fmt, opts, out, false, err);
		if (!rc)
			sv_log(*out, "%s: the disk cache's blocks of it could not be used (%s): "
			       "dropped, read again from the server", (*out)->path, first);
	}
	return rc;
}

int sv_container_open_as(const char *path, const struct sv_format *fmt,
			 const struct sv_opts *opts, struct sv_container **out,
			 struct sv_err *err)
{
	return open_as(path, fmt, opts, out, true, err);
}

int sv_container_open_src(struct sv_source *src, const struct sv_format *fmt,
			  const struct sv_opts *opts, struct sv_container **out,
			  struct sv_err *err)
{
	*out = NULL;
	struct sv_container *c = alloc_container(opts);
	if (!c) {
		sv_source_free(src);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	c->fmt = fmt;
	c->src = src;
	if (opts->read_only)
		src->read_only = true;
	return open_source(c, src->path, 0, opts, out, NULL, err);
}

int sv_container_open_mem(const void *p, size_t n, const struct sv_opts *opts,
			  struct sv_container **out, struct sv_err *err)
{
	*out = NULL;
	struct sv_container *c = alloc_container(opts);
	if (!c)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = sv_source_open_mem(p, n, &c->src, err);
	c->read_only = true;
	if (!rc)
		rc = open_common(c, "(memory)", opts, err);
	if (rc) {
		sv_container_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

static int open_common(struct sv_container *c, const char *path,
		       const struct sv_opts *opts, struct sv_err *err)
{
	int rc;
	c->path = c->src->path;
	c->src->log = source_log;
	c->src->log_arg = c;
	c->mtime0 = c->src->st.st_mtim;
	bool is_dir = sv_container_is_dir(c);
	if (!is_dir && !S_ISREG(c->src->st.st_mode)) {
		rc = sv_err_set(err, -EMEDIUMTYPE, "%s: not a regular file", path);
		goto fail;
	}
	if (c->fmt) {
		if (is_dir && !c->fmt->probe_dir) {
			rc = sv_err_set(err, -EISDIR, "%s: is a directory, and %s containers are files",
					path, c->fmt->name);
			goto fail;
		}
	} else if (opts->format) {
		c->fmt = sv_format_find(opts->format);
		if (!c->fmt) {
			rc = sv_err_set(err, -EINVAL, "unknown format name \"%s\" (see --formats)",
					opts->format);
			goto fail;
		}
		if (is_dir && !c->fmt->probe_dir) {
			rc = sv_err_set(err, -EISDIR, "%s: is a directory, and %s containers are files",
					path, c->fmt->name);
			goto fail;
		}
	} else if (is_dir) {
		for (size_t i = 0; sv_formats[i] && !c->fmt; i++)
			if (sv_formats[i]->probe_dir && sv_formats[i]->probe_dir(c))
				c->fmt = sv_formats[i];
		if (!c->fmt) {
			rc = sv_err_set(err, -EMEDIUMTYPE,
					"%s: is a directory, and not one savefs knows (see --formats)",
					path);
			goto fail;
		}
	} else {
		uint8_t head[64];
		size_t k = sv_container_size(c) < sizeof head ? (size_t)sv_container_size(c)
							       : sizeof head;
		rc = sv_container_pread(c, 0, head, k, err);
		if (rc)
			goto fail;
		for (size_t i = 0; sv_formats[i] && !c->fmt; i++)
			if (sv_formats[i]->probe(head, k))
				c->fmt = sv_formats[i];
		if (!c->fmt) {
			rc = sv_err_set(err, -EMEDIUMTYPE,
					"%s: not a container savefs knows (see --formats)", path);
			goto fail;
		}
	}
	c->commit = !c->fmt->edits ? SV_COMMIT_NONE
		    : is_dir ? c->fmt->edits->commit_dir : c->fmt->edits->commit_file;
	/* What a kind needs, the format has (the programmer's promise). */
	assert(c->commit != SV_COMMIT_REWRITE || SV_FMT(c->fmt, edits, commit));
	assert((c->commit != SV_COMMIT_IN_PLACE && c->commit != SV_COMMIT_MEMBERS) ||
	       SV_FMT(c->fmt, edits, commit_in_place));
	assert(c->commit != SV_COMMIT_APPEND || SV_FMT(c->fmt, live, write));
	if (c->commit == SV_COMMIT_NONE)
		c->read_only = true;
	if (!c->read_only && c->src->ops->whole_only && c->commit != SV_COMMIT_REWRITE) {
		static const char *const how[] = {
			[SV_COMMIT_IN_PLACE] = "changed in place",
			[SV_COMMIT_APPEND] = "grown by appending",
			[SV_COMMIT_MEMBERS] = "changed member by member",
		};
		sv_warn(c, "%s: an %s is written only whole, and a %s container is %s: mounted "
			"read-only", c->path, c->src->ops->kind, c->fmt->name, how[c->commit]);
		c->read_only = c->src->read_only = true;
	}
	c->hsize = 64;
	c->htab = malloc(c->hsize * sizeof *c->htab);
	c->cache = opts->cache ? sv_cache_share(opts->cache) : sv_cache_new(opts->cache_cap);
	/* A remote source keeps the blocks it fetched under the same cap, and
	 * on disk beside the persistent index (unless -o noindex). */
	if (c->cache && c->src->ops->remote && !c->src->cache)
		c->src->cache = sv_cache_share(c->cache);
	char store[4096];
	if (c->src->ops->remote && !c->src->store && sv_kept_dir(c, store, sizeof store - 8)) {
		strcat(store, "/blocks");
		c->src->store = strdup(store); /* none if out of memory: no disk cache */
	}
	if (!c->htab || !c->cache || (c->src->ops->remote && !c->src->cache)) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	memset(c->htab, 0xff, c->hsize * sizeof *c->htab);
	char idir[4096];
	if (sv_kept_init(c)) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	if (!c->opts.noindex && sv_index_dir(idir, sizeof idir) == -EPERM)
		sv_warn(c, "%s is not this user's own directory (another owner, a link, or open to "
			"others): nothing is kept there between mounts", idir);
	if (sv_node_new(c, SV_ROOT, "", SV_N_DIR, 0, 0) != SV_ROOT ||
	    sv_add_meta(c)) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	sv_source_tree_begin();
	rc = c->fmt->open(c, err);
	sv_source_tree_end();
fail:
	return rc;
}

/* Frees c; with `keep`, all but its source, which is returned (its handle
 * on the cache let go, its log no longer the container's). */
static struct sv_source *container_free(struct sv_container *c, bool keep)
{
	if (!c)
		return NULL;
	sv_pf_stop(c);
	sv_guard_fp_stop(c);
	sv_kept_free(c); /* (its paths are the nodes') */
	if (c->fmt && c->fmt->close)
		c->fmt->close(c);
	SV_EACH_NODE(c, i, 0) {
		free(c->nodes[i].name);
		free(c->nodes[i].kids);
		sv_buf_fini(&c->nodes[i].pending);
	}
	sv_tab_free(c->nodes);
	free(c->freed);
	free(c->evict);
	free(c->htab);
	sv_u64set_fini(&c->tgroups);
	sv_cache_free(c->cache);
	for (size_t i = 0; i < c->nwarnings; i++)
		free(c->warnings[i]);
	free(c->warnings);
	for (size_t i = 0; i < LOG_LINES; i++)
		free(c->log[i]);
	struct sv_source *src = c->src;
	if (keep && src) {
		sv_cache_free(src->cache);
		src->cache = NULL;
		src->log = NULL;
		src->log_arg = NULL;
	} else {
		sv_source_free(src);
		src = NULL;
	}
	free(c->format_opts);
	pthread_mutex_destroy(&c->log_lock);
	pthread_mutex_destroy(&c->pf_lock);
	pthread_mutex_destroy(&c->ld_lock);
	pthread_cond_destroy(&c->ld_cond);
	pthread_mutex_destroy(&c->fp_lock);
	pthread_rwlock_destroy(&c->lock);
	free(c);
	return src;
}

void sv_container_free(struct sv_container *c)
{
	container_free(c, false);
}

struct sv_source *sv_container_free_keep(struct sv_container *c)
{
	return container_free(c, true);
}
