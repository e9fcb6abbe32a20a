/*
 * folder.c - a save folder: a directory that is not itself a container,
 * shown as it is, with every entry a format claims by its content shown as
 * a directory holding that container's tree (savefs.h, "trees").
 *
 * Ids: an entry of the folder's own (a real directory, a file that passes
 * through, a claimed entry, a container's raw bytes) is its index in the
 * entry table, below 2^32; a node of a container is its slot's epoch (9
 * bits: which container opened in the slot) << 54 | (slot + 1) << 32 |
 * its node number (tree.h, sv_slot_id), except the container's root, which
 * is its claimed entry.
 * A container's raw bytes are NAME/.savefs/container: a file beside the
 * container's own /.savefs/ files, the same for every format.
 *
 * The folder is looked at afresh: a listing reads the real directory, and
 * each look at an entry (lookup, stat, listing) compares its identity
 * (device, inode, size, mtime) with the one its kind was classified on; a
 * changed entry is classified again, and a container whose file changed is
 * closed, to be read again whole at its next use.  A local entry is classified
 * by its first bytes and confirmed by opening its container (kept open for
 * its first use); a container that cannot be opened (a save cut short)
 * passes through as the file it is, the reason in the log and the info.
 * A remote entry is classified by its name and size (a listing costs listings,
 * not a request per entry), and confirmed when its container is opened.
 * Containers close, least recently used first, when more than
 * opts->max_open are open and idle (no open file, no pending edit).
 *
 * What is shown is what is there: a symbolic link is a link (never
 * followed: every path is opened beneath the folder, no part of it a
 * link), a FIFO, a socket or a device is itself and never opened.  A real
 * ".savefs" at the root is not shown (the mount's own is), nor are the
 * temporary files a commit left when it was killed, which the first look
 * at their directory removes.
 *
 * Edits: a container's node is edited and committed by its container
 * (its lock, its checks, its log); a file that passes through is the real
 * file, opened by descriptor; a real directory takes new files,
 * directories, renames and removals as the file system does.  Each real
 * directory looked into is watched (inotify), and what changed in it is
 * told to the client (live_fn), which drops what the kernel holds of it.
 *
 * Locking: `lock` guards the tables; a container's calls run outside it
 * (the container has its own locks) but its close and sv_container_idle()
 * (a try-lock), and so do the callers' callbacks but live_fn, which only
 * queues (internal.h's lock table).
 */
#include "folder.h"

/* Appends a line to the folder's log, stamped (lock held). */
void sv_folder_log(struct sv_folder *f, const char *fmt, ...)
{
	char line[SV_ERR_MAX * 2], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (f->log.len > (64u << 10)) {
		/* The older half goes. */
		size_t cut = f->log.len / 2;
		uint8_t *nl = memchr(f->log.p + cut, '\n', f->log.len - cut);
		cut = nl ? (size_t)(nl - f->log.p) + 1 : f->log.len;
		memmove(f->log.p, f->log.p + cut, f->log.len - cut);
		f->log.len -= cut;
	}
	sv_buf_printf(&f->log, "%s %s\n", stamp, line);
}

int64_t sv_folder_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* ---- the entry table (lock held) -------------------------------------------- */

static uint32_t hash_of(const char *rel)
{
	return (uint32_t)XXH3_64bits(rel, strlen(rel));
}

/* Whether entries of this kind are found by their path. */
static bool hashed(int kind)
{
	return kind == E_DIR || kind == E_FILE || kind == E_CLAIMED;
}

int sv_folder_grow_hash(struct sv_folder *f)
{
	uint32_t size = f->hsize ? f->hsize * 2 : 256;
	uint32_t *h = malloc(size * sizeof *h);
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, size * sizeof *h);
	for (uint32_t i = 0; i < f->ne; i++) {
		if (!hashed(f->e[i].kind))
			continue;
		uint32_t b = hash_of(f->e[i].rel) & (size - 1);
		f->e[i].hnext = h[b];
		h[b] = i;
	}
	free(f->htab);
	f->htab = h;
	f->hsize = size;
	return 0;
}

uint32_t sv_folder_find_entry(struct sv_folder *f, const char *rel)
{
	for (uint32_t i = f->htab[hash_of(rel) & (f->hsize - 1)]; i != SV_NONE; i = f->e[i].hnext)
		if (!strcmp(f->e[i].rel, rel))
			return i;
	return SV_NONE;
}

void sv_folder_set_rel(struct sv_folder *f, uint32_t i, char *rel)
{
	struct entry *e = &f->e[i];
	if (hashed(e->kind)) {
		uint32_t *at = &f->htab[hash_of(e->rel) & (f->hsize - 1)];
		while (*at != SV_NONE && *at != i)
			at = &f->e[*at].hnext;
		if (*at == i)
			*at = e->hnext;
	}
	free(e->rel);
	e->rel = rel;
	const char *slash = strrchr(rel, '/');
	e->name = slash ? slash + 1 : rel;
	if (hashed(e->kind)) {
		uint32_t b = hash_of(rel) & (f->hsize - 1);
		e->hnext = f->htab[b];
		f->htab[b] = i;
	}
}

/* Adds an entry (found by its path unless it is a raw one, whose path is
 * its claimed entry's). */
uint32_t sv_folder_add_entry(struct sv_folder *f, uint32_t parent, char *rel, int kind)
{
	if (f->ne == f->cape) {
		uint32_t cap = f->cape ? f->cape * 2 : 64;
		struct entry *e = realloc(f->e, cap * sizeof *e);
		if (!e)
			return SV_NONE;
		f->e = e;
		f->cape = cap;
	}
	if (f->ne >= f->hsize / 2 && sv_folder_grow_hash(f))
		return SV_NONE;
	uint32_t i = f->ne++;
	struct entry *e = &f->e[i];
	memset(e, 0, sizeof *e);
	e->rel = rel;
	const char *slash = strrchr(rel, '/');
	e->name = slash ? slash + 1 : rel;
	e->parent = parent;
	e->kind = kind;
	e->hnext = SV_NONE;
	if (hashed(kind)) {
		uint32_t b = hash_of(rel) & (f->hsize - 1);
		e->hnext = f->htab[b];
		f->htab[b] = i;
	}
	return i;
}

/* The real path of entry i (a new string). */
char *sv_folder_full_path(struct sv_folder *f, uint32_t i)
{
	return f->src->ops->place_location(f->src, f->e[i].rel, S_ISDIR(f->e[i].st.st_mode));
}


/* Takes rel (a new string): 0, or -errno (rel freed). */
int sv_folder_place_open(struct sv_folder *f, char *rel, struct place *p)
{
	p->rel = rel;
	p->at = *rel ? sv_parent_beneath(f->dfd, rel, &p->leaf)
		     : sv_open_beneath(f->dfd, ".", O_PATH | O_DIRECTORY, 0);
	if (!*rel)
		p->leaf = ".";
	if (p->at < 0) {
		free(rel);
		p->rel = NULL;
		return p->at;
	}
	return 0;
}

void sv_folder_place_close(struct place *p)
{
	if (p->at >= 0)
		close(p->at);
	p->at = -1;
	free(p->rel);
	p->rel = NULL;
}

bool sv_folder_kind_is_meta(int kind)
{
	return kind == E_MDIR || kind == E_MINFO || kind == E_MLOG;
}

/* The same file, unchanged: as a source's identity is checked (device,
 * inode, size, mtime and ctime, which catches a rewrite whose mtime was put
 * back, and a chmod). */
bool sv_folder_same_file(const struct stat *a, const struct stat *b)
{
	return sv_source_same(a, b) == SV_SOURCE_SAME;
}



static void keep_held(struct sv_folder *f, uint32_t i, struct sv_source *src);

void sv_folder_close_slot(struct sv_folder *f, uint32_t s)
{
	if (f->s[s].c) {
		uint32_t claimed = f->s[s].claimed;
		bool current = f->e[claimed].slot == s + 1;
		if (!current && f->superseded)
			f->superseded--;
		if (f->remote && current && !f->e[claimed].held)
			/* Its source (a remote object's first block and identity)
			 * kept for its next open, as sv_folder_classify()'s is. */
			keep_held(f, claimed, sv_container_free_keep(f->s[s].c));
		else
			sv_container_free(f->s[s].c);
		f->s[s].c = NULL;
		f->nopen--;
	}
	f->s[s].err = 0;
}

/* True if path names itself: no part of it is a symbolic link (an entry
 * classified a file may have been replaced by a link since). */
bool sv_folder_path_is_real(const char *path)
{
	char *real = realpath(path, NULL);
	bool same = real && !strcmp(real, path);
	free(real);
	return same;
}

/*
 * What the local file or directory at path (its stat st) is, lock not
 * held: the format that claims it by its first bytes (a directory by its
 * members), confirmed by opening its container (*opened, kept for its
 * first use), or NULL.  A container its format claims but cannot open
 * (cut short, damaged) is *broken (a new string: why): it passes through.
 */
static const struct sv_format *classify_local(struct sv_folder *f, const char *path,
					      const struct stat *st, struct sv_container **opened,
					      char **broken)
{
	int why = 0;
	if (!sv_folder_path_is_real(path))
		return NULL;
	const struct sv_format *fmt = sv_sniff(path, f->opts.format_opts, &why);
	if (!fmt)
		return NULL;
	struct sv_container *c = NULL;
	struct sv_err err;
	sv_err_clear(&err);
	struct sv_opts o = f->opts;
	o.format = fmt->name;
	int rc = sv_container_open(path, &o, &c, &err);
	if (rc == -EMEDIUMTYPE)
		return NULL; /* a zip of text files, a JSON object that is no drawing */
	if (rc == -ENOENT || rc == -ENOMEM || rc == -EBUSY)
		return rc == -ENOENT ? NULL : fmt; /* gone meanwhile; or opened at its use */
	if (rc) {
		*broken = strdup(err.msg[0] ? err.msg : strerror(-rc));
		return *broken ? fmt : NULL;
	}
	*opened = c;
	return fmt;
}

/* The format whose containers are usually named like `name` (a glob of
 * its names), or NULL.  A remote entry is classified so until its container
 * is opened: judging it by its first bytes would cost a request each. */
static const struct sv_format *format_by_name(const char *name, const struct stat *st)
{
	if (!S_ISREG(st->st_mode) || st->st_size < 8)
		return NULL;
	for (size_t i = 0; sv_formats[i]; i++)
		for (const char *const *g = sv_formats[i]->names; g && *g; g++)
			if (!fnmatch(*g, name, 0))
				return sv_formats[i];
	return NULL;
}

/* A remote directory classified by its members (a segmented recording under a
 * prefix): the format that claims it, or NULL (lock not held). */
static const struct sv_format *classify_remote_dir(struct sv_folder *f, const char *path)
{
	int why = 0;
	return sv_sniff(path, f->opts.format_opts, &why);
}

/* What a kept source holds: its first block (the whole object within it). */
static uint64_t held_size(const struct sv_source *src)
{
	uint64_t n = (uint64_t)src->st.st_size;
	return n < HELD_BLOCK ? n : HELD_BLOCK;
}

/* Entry i's kept source, taken (lock held): NULL if none. */
struct sv_source *sv_folder_take_held(struct sv_folder *f, uint32_t i)
{
	struct sv_source *src = f->e[i].held;
	f->e[i].held = NULL;
	if (src)
		f->held_bytes -= held_size(src);
	return src;
}

/* Entry i's source as sv_folder_classify() opened it (or its container left it),
 * kept (lock held): the oldest kept go while more than half the cache's
 * worth of first blocks is kept, or more than ringcap sources. */
static void keep_held(struct sv_folder *f, uint32_t i, struct sv_source *src)
{
	sv_source_free(sv_folder_take_held(f, i));
	if (!src || !f->ringcap) {
		sv_source_free(src);
		return;
	}
	f->e[i].held = src;
	f->held_bytes += held_size(src);
	while (f->nring && (f->nring == f->ringcap || f->held_bytes > f->opts.cache_cap / 2)) {
		struct kept old = f->ring[f->ringat];
		f->ringat = (f->ringat + 1) % f->ringcap;
		f->nring--;
		/* (A source taken since, or another kept since, stays.) */
		if (old.src != src && f->e[old.i].held == old.src)
			sv_source_free(sv_folder_take_held(f, old.i));
	}
	f->ring[(f->ringat + f->nring++) % f->ringcap] = (struct kept){i, src};
}

/* Slot s's container no longer stands for its entry (its file was
 * replaced or rewritten): closed now if unused, else when idle (lock
 * held). */
void sv_folder_supersede(struct sv_folder *f, uint32_t s)
{
	struct slot *old = &f->s[s];
	if (old->c && !old->users && sv_container_idle(old->c))
		sv_folder_close_slot(f, s);
	else if (old->c)
		f->superseded++;
}

/*
 * Looks at entry i as it is now: 0, or -ENOENT if it is gone.  A new
 * identity is classified again: a directory or a regular file a format claims
 * is a claimed entry (its container, if open, closed: it is read again at its next
 * use), else it passes through.
 */
int sv_folder_classify(struct sv_folder *f, uint32_t i)
{
	struct entry *e = &f->e[i];
	if (sv_folder_kind_is_meta(e->kind))
		return 0;
	if (e->kind == E_RAW)
		return sv_folder_classify(f, e->parent);
	struct stat st;
	struct sv_err err;
	int r0 = f->src->ops->place_stat(f->src, e->rel, &st, &err);
	if (r0 == -ENOENT && e->ghost_ns && sv_folder_now_ns() < e->ghost_ns)
		return 0; /* removed: an empty directory until its rmdir */
	e->ghost_ns = 0;
	if (r0)
		return r0;
	if (e->classified && sv_folder_same_file(&st, &e->st))
		return 0;
	if (e->classified && e->kind == E_FILE && e->writers) {
		/* Being written through the mount: what it is is classified when
		 * the writers are done (half a container is no container). */
		e->st = st;
		return 0;
	}
	if (e->classified && e->kind == E_CLAIMED && e->slot && f->s[e->slot - 1].c) {
		/* Its container's own commit (or append) changed it: still the
		 * file the container holds.  A commit under way is not waited
		 * for: until it is done the file is what it was. */
		struct stat held;
		int r = sv_container_identity(f->s[e->slot - 1].c, &held);
		if (r == -EBUSY)
			return 0;
		if (!r && sv_folder_same_file(&held, &st)) {
			e->st = st;
			return 0;
		}
	}
	/* What it is, found outside the lock (a local one is sniffed and
	 * opened): other containers' calls go on meanwhile.  The table may
	 * move: e is taken again. */
	int kind = S_ISDIR(st.st_mode) ? E_DIR : E_FILE;
	const struct sv_format *fmt = NULL;
	struct sv_container *opened = NULL;
	char *broken = NULL;
	if (i != 0 && !e->in_raw && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
		e->st.st_mode = st.st_mode; /* its location's form */
		if (f->remote) {
			/* By name; a directory by its members once it is looked
			 * into (probe_dir). */
			fmt = format_by_name(e->name, &st);
		} else {
			char *p = sv_folder_full_path(f, i);
			pthread_mutex_unlock(&f->lock);
			fmt = p ? classify_local(f, p, &st, &opened, &broken) : NULL;
			free(p);
			pthread_mutex_lock(&f->lock);
			e = &f->e[i];
		}
	}
	if (fmt)
		kind = broken ? E_FILE : E_CLAIMED;
	if (e->slot && (kind != E_CLAIMED || e->classified)) {
		/* Read again whole at its next use, under new node numbers.
		 * The old container stays for whoever uses it now (its numbers
		 * show the old file, whole) until it is idle; unused, it goes
		 * now (a file rewritten in place: its claim on the file goes
		 * with it). */
		sv_folder_supersede(f, e->slot - 1);
		e->slot = 0;
		e->raw = 0;
	}
	if (broken && (!e->broken || strcmp(broken, e->broken)))
		sv_folder_log(f, "%s: a %s container that cannot be opened (%s): shown as the file "
			   "it is", e->rel, fmt->name, broken);
	free(e->broken);
	e->broken = broken;
	e->kind = kind;
	e->fmt = fmt;
	e->st = st;
	e->classified = true;
	e->probed = false;
	e->times_set = false;
	if (opened)
		sv_folder_adopt(f, i, opened);
	return 0;
}

/* A temporary file a commit of one of the folder's containers writes
 * beside it (".NAME.savefs-XXXXXX"): never one of the folder's entries
 * (one a killed commit left is removed at the first look). */
bool sv_folder_commit_leftover(const char *name)
{
	const char *x = name[0] == '.' ? strstr(name, ".savefs-") : NULL;
	return x && x > name + 1 && strlen(x + 8) == 6 && !strchr(x + 8, '-');
}

/* A name of directory entry dir the folder does not show: a leftover of a
 * commit, and a real ".savefs" at the root (the mount's own is there). */
bool sv_folder_hidden_name(uint32_t dir, const char *name)
{
	return sv_folder_commit_leftover(name) || (dir == 0 && !strcmp(name, ".savefs"));
}

char *sv_folder_rel_of(const struct sv_folder *f, uint32_t dir, const char *name)
{
	const char *base = f->e[dir].rel;
	char *rel = NULL;
	return asprintf(&rel, "%s%s%s", base, *base ? "/" : "", name) < 0 ? NULL : rel;
}

/* Entry `name` of directory entry dir, looked at now: its index, or
 * SV_NONE with *rc. */
uint32_t sv_folder_child(struct sv_folder *f, uint32_t dir, const char *name, int *rc)
{
	*rc = 0;
	if (!sv_real_name_ok(name) || sv_folder_hidden_name(dir, name)) {
		*rc = -ENOENT;
		return SV_NONE;
	}
	char *rel = sv_folder_rel_of(f, dir, name);
	if (!rel) {
		*rc = -ENOMEM;
		return SV_NONE;
	}
	sv_folder_watch_dir(f, dir);
	uint32_t i = sv_folder_find_entry(f, rel);
	if (i == SV_NONE) {
		i = sv_folder_add_entry(f, dir, rel, E_FILE);
		if (i == SV_NONE) {
			free(rel);
			*rc = -ENOMEM;
			return SV_NONE;
		}
		f->e[i].in_raw = f->e[dir].kind == E_RAW || f->e[dir].in_raw;
	} else {
		free(rel);
	}
	*rc = sv_folder_classify(f, i);
	return *rc ? SV_NONE : i;
}

/* True if entry i lists as the real directory: a directory no format
 * claims, or the raw form of a container that is a directory. */
bool sv_folder_real_dir(const struct sv_folder *f, uint32_t i)
{
	const struct entry *e = &f->e[i];
	return e->kind == E_DIR || (e->kind == E_RAW && S_ISDIR(f->e[e->parent].st.st_mode));
}

/* A remote directory about to be looked into is classified by its members
 * (a segmented recording under a prefix is a container); once per
 * identity (lock held). */
void sv_folder_probe_dir(struct sv_folder *f, uint32_t d)
{
	struct entry *e = &f->e[d];
	if (!f->remote || d == 0 || e->kind != E_DIR || e->probed || e->in_raw)
		return;
	e->probed = true;
	char *p = sv_folder_full_path(f, d);
	struct stat was = e->st;
	pthread_mutex_unlock(&f->lock);
	const struct sv_format *fmt = p ? classify_remote_dir(f, p) : NULL;
	free(p);
	pthread_mutex_lock(&f->lock);
	e = &f->e[d];
	if (fmt && e->kind == E_DIR && sv_folder_same_file(&was, &e->st)) {
		e->kind = E_CLAIMED;
		e->fmt = fmt;
	}
}

/* ---- the calls ---------------------------------------------------------------- */

int sv_folder_open(const char *path, const struct sv_opts *opts, struct sv_folder **out,
		   struct sv_err *err)
{
	*out = NULL;
	struct sv_folder *f = calloc(1, sizeof *f);
	if (!f)
		return sv_err_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->opened, NULL);
	sv_folder_ahead_init(f);
	f->dfd = -1;
	f->ifd = -1;
	f->opts = *opts;
	f->opts.format = NULL;
	/* One cache, one cap, for every container of the folder. */
	f->opts.cache = sv_cache_new(opts->cache_cap);
	f->opts.lazy_prepare = true;
	f->opts.read_only_if_held = true;
	f->opts.in_folder = true;
	f->format_opts = opts->format_opts ? strdup(opts->format_opts) : NULL;
	f->opts.format_opts = f->format_opts;
	int rc = f->opts.cache ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	/* The place, read through its source (its own entries are changed
	 * through the directory's descriptor, where it has one). */
	int why = 0;
	if (!rc)
		rc = sv_source_open(path, f->opts.format_opts, true, &f->src, &why, err);
	if (!rc && !f->src->ops->place_stat)
		rc = sv_err_set(err, -ENOTDIR, "%s: not a directory", path);
	if (!rc && !(f->path = strdup(f->src->path)))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	if (!rc) {
		f->remote = f->src->ops->remote;
		f->dfd = f->remote ? -1 : f->src->fd;
		/* Remote files' first blocks kept for their containers' opens:
		 * half the cache's worth. */
		f->ringcap = f->remote ? HELD_MAX : 0;
		if (f->ringcap && !(f->ring = calloc(f->ringcap, sizeof *f->ring)))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
	}
	char *root = rc ? NULL : strdup("");
	if (!rc && (!root || sv_folder_grow_hash(f) || sv_folder_add_entry(f, 0, root, E_DIR) != 0)) {
		free(root);
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	}
	if (!rc)
		rc = sv_folder_classify(f, 0) ? sv_err_set(err, -EIO, "%s: cannot be looked at", path) : 0;
	/* /.savefs/: the folder's info and log (not found by path). */
	static const struct {
		const char *rel;
		int kind;
	} meta[] = {{".savefs", E_MDIR}, {".savefs/info", E_MINFO}, {".savefs/log", E_MLOG}};
	uint32_t *slot[] = {&f->mdir, &f->minfo, &f->mlog};
	for (int k = 0; !rc && k < 3; k++) {
		char *rel = strdup(meta[k].rel);
		uint32_t i = rel ? sv_folder_add_entry(f, k ? f->mdir : 0, rel, meta[k].kind) : SV_NONE;
		if (i == SV_NONE) {
			free(rel);
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		} else {
			f->e[i].st = f->e[0].st;
			f->e[i].classified = true;
			*slot[k] = i;
		}
	}
	if (rc) {
		sv_folder_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

char *sv_folder_location(const struct sv_folder *f)
{
	return strdup(f->path);
}

void sv_folder_free(struct sv_folder *f)
{
	if (!f)
		return;
	sv_folder_ahead_stop(f);
	sv_folder_watch_stop(f);
	for (uint32_t s = 0; s < f->ns; s++) {
		sv_folder_close_slot(f, s);
		free(f->s[s].live);
	}
	for (uint32_t i = 0; i < f->ne; i++) {
		free(f->e[i].rel);
		free(f->e[i].broken);
		sv_source_free(f->e[i].held);
	}
	free(f->e);
	free(f->ring);
	free(f->s);
	free(f->htab);
	sv_source_free(f->src); /* and its descriptor, dfd */
	free(f->path);
	free(f->format_opts);
	sv_buf_fini(&f->log);
	sv_blob_unref(f->info);
	sv_cache_free(f->opts.cache);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->ahead.lock);
	pthread_cond_destroy(&f->opened);
	free(f);
}
