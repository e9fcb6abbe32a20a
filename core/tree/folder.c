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
 * (device, inode, size, mtime) with the one its kind was judged on; a
 * changed entry is judged again, and a container whose file changed is
 * closed, to be read again whole at its next use.  A local entry is judged
 * by its first bytes and confirmed by opening its container (kept open for
 * its first use); a container that cannot be opened (a save cut short)
 * passes through as the file it is, the reason in the log and the info.
 * A remote entry is judged by its name and size (a listing costs listings,
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
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

enum { E_DIR, E_FILE, E_BOX, E_RAW, E_MDIR, E_MINFO, E_MLOG };

struct entry {
	char *rel;          /* owned: its path in the folder ("" the root) */
	const char *name;   /* its last part (in rel) */
	uint32_t parent;    /* an entry */
	int kind;
	bool judged;
	bool in_raw;        /* inside a container's raw form: never claimed */
	struct stat st;     /* what its kind was judged on */
	const struct sv_format *fmt; /* E_BOX: the format that claims it */
	uint32_t slot;      /* E_BOX, E_RAW: its container's slot + 1 */
	uint32_t raw;       /* E_BOX: its E_RAW entry, 0 until looked up */
	uint32_t writers;   /* E_FILE: opens for writing through the mount
			     * (judged again only when they are done) */
	int wd;             /* a real directory: its inotify watch, or 0 */
	bool swept;         /* a real directory: its commits' leftovers removed */
	bool probed;        /* a remote directory: judged by its members */
	int64_t ghost_ns;   /* a container whose file was removed through the
			     * mount (rm -r's first step): an empty directory
			     * until it is removed too, or this time (mono) */
	bool times_set;     /* a container's directory: times a client set
			     * (touch, tar, rsync), kept while its file is the
			     * same, as a container's files keep theirs */
	struct timespec set_mtime, set_atime;
	char *broken;       /* owned: why the container a format claims it as
			     * cannot be opened (it passes through as itself),
			     * or NULL */
	struct sv_source *held; /* a remote file's source as classify() opened
				 * it (its first bytes read), for its
				 * container's open; or NULL */
	uint32_t hnext;     /* the next entry in its hash chain, or SV_NONE */
};

struct slot {
	struct sv_container *c; /* NULL while closed */
	uint32_t box;           /* its entry */
	uint32_t meta;          /* its /.savefs node (SV_NONE if none) */
	uint64_t used;          /* when last used (the clock) */
	int64_t used_ns;        /* and when, monotonic */
	unsigned users;         /* calls using it outside the lock: it is not
				 * closed under them */
	bool opening;           /* a call is opening it (outside the lock) */
	uint32_t epoch;         /* containers opened in it so far */
	int err;                /* its last open's failure, or 0 */
	char why[SV_ERR_MAX];
	struct sv_forward *live;  /* owned: its changes outside commits, by id */
	bool removed;           /* its file was removed through the mount: its
				 * directories list nothing, and removals in it
				 * are done (rm -r goes on from there: its
				 * lookups still find what rm removes) */
	int64_t guard_ns;       /* a removal of its raw form was refused (rm -r
				 * of a directory container): removals of its
				 * entries are refused too until then (mono) */
};

struct sv_folder {
	pthread_mutex_t lock;
	pthread_cond_t opened;  /* a slot's open is done */
	char *path;             /* owned: the folder's location (a real path) */
	struct sv_source *src;  /* the folder's place: its entries are read
				 * through it */
	bool remote;            /* a remote place: its own entries are read-only */
	int dfd;                /* a local place's directory (src's), or -1 */
	struct kept {
		uint32_t i;
		const struct sv_source *src;
	} *ring;                /* entries' kept sources, oldest first */
	uint32_t nring, ringcap, ringat; /* how many, how many at most, the oldest */
	uint64_t held_bytes;    /* what the kept sources hold (half the cache at most) */
	struct sv_opts opts;
	char *format_opts;      /* owned: opts.format_opts */
	struct entry *e;
	uint32_t ne, cape;
	uint32_t *htab;         /* hash heads (SV_NONE: empty), hsize a power of 2 */
	uint32_t hsize;
	struct slot *s;
	uint32_t ns, caps;
	uint64_t clock;
	unsigned nopen;
	unsigned superseded;    /* open containers whose file was replaced */
	uint32_t mdir, minfo, mlog; /* /.savefs/, its info and log */
	struct sv_buf log;      /* the folder's own log (its last 64 KiB) */
	struct sv_blob *info;   /* /.savefs/info as made for the last read at
				 * offset 0: later pieces come from it */
	sv_tree_changed_fn live_fn; /* the client's, for changes outside commits */
	void *live_arg;
	int ifd;                /* inotify, or -1 */
	uint32_t *wdir;         /* a watch's directory entry, by watch */
	int nwd;                /* wdir's length */
	pthread_t watcher;
	bool watching;
	int wake[2];            /* a pipe: the watcher stops when it closes */
};

/* Appends a line to the folder's log, stamped (lock held). */
static void folder_log(struct sv_folder *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void folder_log(struct sv_folder *f, const char *fmt, ...)
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

/* A container used this recently is not idle: a reader between its
 * lookup and its next call keeps it (the kernel's requests of one system
 * call arrive apart). */
#define IDLE_NS 2000000000LL

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* rm -r NAME: its first step removes NAME/.savefs/container; NAME then
 * stays an empty directory this long, for the steps after it (a few
 * system calls).  For a directory container, whose raw form cannot be
 * removed, its entries are not removed one by one either, this long. */
#define GHOST_NS (30 * 1000000000LL)

/* A remote source kept for its container's open holds its first block
 * (HELD_BLOCK at most); HELD_MAX are kept at most. */
#define HELD_BLOCK (256u << 10)
#define HELD_MAX 4096

/* A container's node as an id: the slot, the slot's epoch (which of the
 * containers opened in it, so that a forget meant for an earlier one is
 * not taken by the present one), the node. */
#define SLOT_ID(slot, node) slot_id(f, slot, node)

struct sv_folder;
static sv_id slot_id(struct sv_folder *f, uint32_t slot, uint32_t node);

/* ---- the entry table (lock held) -------------------------------------------- */

static uint32_t hash_of(const char *rel)
{
	return (uint32_t)XXH3_64bits(rel, strlen(rel));
}

static int grow_hash(struct sv_folder *f)
{
	uint32_t size = f->hsize ? f->hsize * 2 : 256;
	uint32_t *h = malloc(size * sizeof *h);
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, size * sizeof *h);
	for (uint32_t i = 0; i < f->ne; i++) {
		if (f->e[i].kind != E_DIR && f->e[i].kind != E_FILE && f->e[i].kind != E_BOX)
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

static uint32_t find_entry(struct sv_folder *f, const char *rel)
{
	for (uint32_t i = f->htab[hash_of(rel) & (f->hsize - 1)]; i != SV_NONE; i = f->e[i].hnext)
		if (!strcmp(f->e[i].rel, rel))
			return i;
	return SV_NONE;
}

/* Adds an entry (found by its path unless it is a raw one, whose path is
 * its box's). */
static uint32_t add_entry(struct sv_folder *f, uint32_t parent, char *rel, int kind)
{
	if (f->ne == f->cape) {
		uint32_t cap = f->cape ? f->cape * 2 : 64;
		struct entry *e = realloc(f->e, cap * sizeof *e);
		if (!e)
			return SV_NONE;
		f->e = e;
		f->cape = cap;
	}
	if (f->ne >= f->hsize / 2 && grow_hash(f))
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
	if (kind == E_DIR || kind == E_FILE || kind == E_BOX) {
		uint32_t b = hash_of(rel) & (f->hsize - 1);
		e->hnext = f->htab[b];
		f->htab[b] = i;
	}
	return i;
}

/* The real path of entry i (a new string). */
static char *full_path(struct sv_folder *f, uint32_t i)
{
	return f->src->ops->place_location(f->src, f->e[i].rel, S_ISDIR(f->e[i].st.st_mode));
}

/* A real entry to change: its directory, reached beneath the folder with
 * no link on the way, and its name there (the root: the folder, "."). */
struct place {
	int at;
	const char *leaf;
	char *rel;     /* owned */
};

/* Takes rel (a new string): 0, or -errno (rel freed). */
static int place_open(struct sv_folder *f, char *rel, struct place *p)
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

static void place_close(struct place *p)
{
	if (p->at >= 0)
		close(p->at);
	p->at = -1;
	free(p->rel);
	p->rel = NULL;
}

static bool kind_is_meta(int kind)
{
	return kind == E_MDIR || kind == E_MINFO || kind == E_MLOG;
}

/* The same file, unchanged: as a source's identity is checked (device,
 * inode, size, mtime and ctime, which catches a rewrite whose mtime was put
 * back, and a chmod). */
static bool same_file(const struct stat *a, const struct stat *b)
{
	return sv_source_same(a, b) == SV_SOURCE_SAME;
}

static int open_box(struct sv_folder *f, uint32_t i, struct sv_container **out,
			 uint32_t *slot, struct sv_err *err);
static void put_locked(struct sv_folder *f, uint32_t slot);
static void adopt(struct sv_folder *f, uint32_t i, struct sv_container *c);

static void watch(struct sv_folder *f, uint32_t d);

static void keep_held(struct sv_folder *f, uint32_t i, struct sv_source *src);

static void close_slot(struct sv_folder *f, uint32_t s)
{
	if (f->s[s].c) {
		uint32_t box = f->s[s].box;
		bool current = f->e[box].slot == s + 1;
		if (!current && f->superseded)
			f->superseded--;
		if (f->remote && current && !f->e[box].held)
			/* Its source (a remote object's first block and identity)
			 * kept for its next open, as classify()'s is. */
			keep_held(f, box, sv_container_free_keep(f->s[s].c));
		else
			sv_container_free(f->s[s].c);
		f->s[s].c = NULL;
		f->nopen--;
	}
	f->s[s].err = 0;
}

/* True if path names itself: no part of it is a symbolic link (an entry
 * judged a file may have been replaced by a link since). */
static bool path_is_real(const char *path)
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
	if (!path_is_real(path))
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
 * its names), or NULL.  A remote entry is judged so until its container
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

/* A remote directory judged by its members (a segmented recording under a
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
static struct sv_source *take_held(struct sv_folder *f, uint32_t i)
{
	struct sv_source *src = f->e[i].held;
	f->e[i].held = NULL;
	if (src)
		f->held_bytes -= held_size(src);
	return src;
}

/* Entry i's source as classify() opened it (or its container left it),
 * kept (lock held): the oldest kept go while more than half the cache's
 * worth of first blocks is kept, or more than ringcap sources. */
static void keep_held(struct sv_folder *f, uint32_t i, struct sv_source *src)
{
	sv_source_free(take_held(f, i));
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
			sv_source_free(take_held(f, old.i));
	}
	f->ring[(f->ringat + f->nring++) % f->ringcap] = (struct kept){i, src};
}

/* Slot s's container no longer stands for its entry (its file was
 * replaced or rewritten): closed now if unused, else when idle (lock
 * held). */
static void supersede(struct sv_folder *f, uint32_t s)
{
	struct slot *old = &f->s[s];
	if (old->c && !old->users && sv_container_idle(old->c))
		close_slot(f, s);
	else if (old->c)
		f->superseded++;
}

/*
 * Looks at entry i as it is now: 0, or -ENOENT if it is gone.  A new
 * identity is judged again: a directory or a regular file a format claims
 * is a box (its container, if open, closed: it is read again at its next
 * use), else it passes through.
 */
static int classify(struct sv_folder *f, uint32_t i)
{
	struct entry *e = &f->e[i];
	if (kind_is_meta(e->kind))
		return 0;
	if (e->kind == E_RAW)
		return classify(f, e->parent);
	struct stat st;
	struct sv_err err;
	int r0 = f->src->ops->place_stat(f->src, e->rel, &st, &err);
	if (r0 == -ENOENT && e->ghost_ns && mono_ns() < e->ghost_ns)
		return 0; /* removed: an empty directory until its rmdir */
	e->ghost_ns = 0;
	if (r0)
		return r0;
	if (e->judged && same_file(&st, &e->st))
		return 0;
	if (e->judged && e->kind == E_FILE && e->writers) {
		/* Being written through the mount: what it is is judged when
		 * the writers are done (half a container is no container). */
		e->st = st;
		return 0;
	}
	if (e->judged && e->kind == E_BOX && e->slot && f->s[e->slot - 1].c) {
		/* Its container's own commit (or append) changed it: still the
		 * file the container holds.  A commit under way is not waited
		 * for: until it is done the file is what it was. */
		struct stat held;
		int r = sv_container_identity(f->s[e->slot - 1].c, &held);
		if (r == -EBUSY)
			return 0;
		if (!r && same_file(&held, &st)) {
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
			char *p = full_path(f, i);
			pthread_mutex_unlock(&f->lock);
			fmt = p ? classify_local(f, p, &st, &opened, &broken) : NULL;
			free(p);
			pthread_mutex_lock(&f->lock);
			e = &f->e[i];
		}
	}
	if (fmt)
		kind = broken ? E_FILE : E_BOX;
	if (e->slot && (kind != E_BOX || e->judged)) {
		/* Read again whole at its next use, under new node numbers.
		 * The old container stays for whoever uses it now (its numbers
		 * show the old file, whole) until it is idle; unused, it goes
		 * now (a file rewritten in place: its claim on the file goes
		 * with it). */
		supersede(f, e->slot - 1);
		e->slot = 0;
		e->raw = 0;
	}
	if (broken && (!e->broken || strcmp(broken, e->broken)))
		folder_log(f, "%s: a %s container that cannot be opened (%s): shown as the file "
			   "it is", e->rel, fmt->name, broken);
	free(e->broken);
	e->broken = broken;
	e->kind = kind;
	e->fmt = fmt;
	e->st = st;
	e->judged = true;
	e->probed = false;
	e->times_set = false;
	if (opened)
		adopt(f, i, opened);
	return 0;
}

/* A temporary file a commit of one of the folder's containers writes
 * beside it (".NAME.savefs-XXXXXX"): never one of the folder's entries
 * (one a killed commit left is removed at the first look). */
static bool commit_leftover(const char *name)
{
	const char *x = name[0] == '.' ? strstr(name, ".savefs-") : NULL;
	return x && x > name + 1 && strlen(x + 8) == 6 && !strchr(x + 8, '-');
}

/* A name of directory entry dir the folder does not show: a leftover of a
 * commit, and a real ".savefs" at the root (the mount's own is there). */
static bool hidden_name(uint32_t dir, const char *name)
{
	return commit_leftover(name) || (dir == 0 && !strcmp(name, ".savefs"));
}

/* Entry `name` of directory entry dir, looked at now: its index, or
 * SV_NONE with *rc. */
static uint32_t child(struct sv_folder *f, uint32_t dir, const char *name, int *rc)
{
	*rc = 0;
	if (!sv_real_name_ok(name) || hidden_name(dir, name)) {
		*rc = -ENOENT;
		return SV_NONE;
	}
	const char *base = f->e[dir].rel;
	size_t n = strlen(base) + strlen(name) + 2;
	char *rel = malloc(n);
	if (!rel) {
		*rc = -ENOMEM;
		return SV_NONE;
	}
	snprintf(rel, n, "%s%s%s", base, *base ? "/" : "", name);
	watch(f, dir);
	uint32_t i = find_entry(f, rel);
	if (i == SV_NONE) {
		i = add_entry(f, dir, rel, E_FILE);
		if (i == SV_NONE) {
			free(rel);
			*rc = -ENOMEM;
			return SV_NONE;
		}
		f->e[i].in_raw = f->e[dir].kind == E_RAW || f->e[dir].in_raw;
	} else {
		free(rel);
	}
	*rc = classify(f, i);
	return *rc ? SV_NONE : i;
}

/* True if entry i lists as the real directory: a directory no format
 * claims, or the raw form of a container that is a directory. */
static bool real_dir(const struct sv_folder *f, uint32_t i)
{
	const struct entry *e = &f->e[i];
	return e->kind == E_DIR || (e->kind == E_RAW && S_ISDIR(f->e[e->parent].st.st_mode));
}

/* A remote directory about to be looked into is judged by its members
 * (a segmented recording under a prefix is a container); once per
 * identity (lock held). */
static void probe_dir(struct sv_folder *f, uint32_t d)
{
	struct entry *e = &f->e[d];
	if (!f->remote || d == 0 || e->kind != E_DIR || e->probed || e->in_raw)
		return;
	e->probed = true;
	char *p = full_path(f, d);
	struct stat was = e->st;
	pthread_mutex_unlock(&f->lock);
	const struct sv_format *fmt = p ? classify_remote_dir(f, p) : NULL;
	free(p);
	pthread_mutex_lock(&f->lock);
	e = &f->e[d];
	if (fmt && e->kind == E_DIR && same_file(&was, &e->st)) {
		e->kind = E_BOX;
		e->fmt = fmt;
	}
}

/* ---- containers (lock held) ----------------------------------------------------- */

/*
 * Closes idle containers (no user, no open file, no pending edit), least
 * recently used first, until `more` more fit under opts.max_open; slot
 * `keep` stays.  Those unused for IDLE_NS go first (a reader between its
 * lookup and its next call keeps its container); then, for the cap holds
 * under any walk (descriptors and memory), any idle one.  Only containers
 * with open files or pending edits exceed it.
 */
static void trim(struct sv_folder *f, uint32_t keep, unsigned more)
{
	int64_t now = mono_ns();
	/* Containers whose file was replaced go as soon as they are idle. */
	for (uint32_t k = 0; f->superseded && k < f->ns; k++)
		if (f->s[k].c && k != keep && f->e[f->s[k].box].slot != k + 1 && !f->s[k].users &&
		    sv_container_idle(f->s[k].c))
			close_slot(f, k);
	while (f->opts.max_open && f->nopen + more > f->opts.max_open) {
		uint32_t lru = SV_NONE;
		for (int pass = 0; pass < 2 && lru == SV_NONE; pass++)
			for (uint32_t k = 0; k < f->ns; k++)
				if (f->s[k].c && k != keep && !f->s[k].users &&
				    !(f->s[k].removed && f->e[f->s[k].box].ghost_ns) &&
				    (pass || now - f->s[k].used_ns >= IDLE_NS) &&
				    (lru == SV_NONE || f->s[k].used < f->s[lru].used) &&
				    sv_container_idle(f->s[k].c))
					lru = k;
		if (lru == SV_NONE)
			break;
		close_slot(f, lru);
		/* What the client holds of it goes too (its ids are stale). */
		uint32_t box = f->s[lru].box;
		if (f->live_fn && f->e[box].slot == lru + 1)
			f->live_fn(f->live_arg, box, f->e[box].parent, f->e[box].name, true);
	}
}

/* An open failed for the bytes' sake (malformed, unsupported, past a
 * limit), not the host's (a server that did not answer, memory). */
static bool bytes_fault(int rc)
{
	return rc == -EBADMSG || rc == -ENOTSUP || rc == -EFBIG || rc == -EMEDIUMTYPE;
}

/* Box entry i's slot, made if it has none: 0 and *slot, or -errno. */
static int slot_for(struct sv_folder *f, uint32_t i, uint32_t *slot, struct sv_err *err)
{
	struct entry *e = &f->e[i];
	if (!e->slot) {
		if (f->ns >= 0x3ffffe)
			return sv_err_set(err, -ENOSPC, "more containers than a folder gives ids to");
		if (f->ns == f->caps) {
			uint32_t cap = f->caps ? f->caps * 2 : 16;
			struct slot *s = realloc(f->s, cap * sizeof *s);
			if (!s)
				return sv_err_set(err, -ENOMEM, "out of memory");
			f->s = s;
			f->caps = cap;
		}
		memset(&f->s[f->ns], 0, sizeof *f->s);
		f->s[f->ns].box = i;
		e->slot = ++f->ns;
	}
	*slot = e->slot - 1;
	return 0;
}

/* Container c, just opened for box entry i, takes its place in slot s
 * (lock held): 0, or -ENOMEM (c closed). */
static int install(struct sv_folder *f, uint32_t i, uint32_t s, struct sv_container *c)
{
	struct slot *sl = &f->s[s];
	sl->c = c;
	f->nopen++;
	sl->epoch++;
	sl->err = 0;
	if (f->e[i].slot != s + 1)
		f->superseded++; /* judged again while it was opening */
	if (!sl->live && !(sl->live = calloc(1, sizeof *sl->live))) {
		close_slot(f, s);
		return -ENOMEM;
	}
	*sl->live = (struct sv_forward){f->live_fn, f->live_arg, i, s, sl->epoch};
	if (f->live_fn)
		sv_container_set_notify(sl->c, sv_forward_fn(), sl->live);
	uint32_t meta;
	sl->meta = sv_resolve(sl->c, ".savefs", &meta) ? SV_NONE : meta;
	return 0;
}

/* A container classify() opened for box entry i, kept for its first use
 * (lock held); closed if another was opened meanwhile. */
static void adopt(struct sv_folder *f, uint32_t i, struct sv_container *c)
{
	uint32_t s;
	struct sv_err err;
	if (slot_for(f, i, &s, &err) || f->s[s].c || f->s[s].opening) {
		sv_container_free(c);
		return;
	}
	f->s[s].used = ++f->clock;
	f->s[s].used_ns = mono_ns();
	if (!install(f, i, s, c))
		trim(f, s, 0);
}

/* The container of box entry i, opened if it is not: 0 and *out (its
 * slot in *slot), or -errno with the reason.  -EMEDIUMTYPE, or a failure
 * to open a container judged by its name only (remote): the entry passes
 * through from now on, and the client is told. */
static int open_box(struct sv_folder *f, uint32_t i, struct sv_container **out,
			 uint32_t *slot, struct sv_err *err)
{
	uint32_t s;
	int rc = slot_for(f, i, &s, err);
	if (rc)
		return rc;
	struct slot *sl = &f->s[s];
	sl->used = ++f->clock;
	sl->used_ns = mono_ns();
	*slot = s;
	trim(f, s, f->s[s].c ? 0 : 1);
	/* Another call opening it: its open is waited for (and only it). */
	while (f->s[s].opening)
		pthread_cond_wait(&f->opened, &f->lock);
	sl = &f->s[s];
	if (sl->c) {
		sl->users++;
		*out = sl->c;
		return 0;
	}
	char *p = full_path(f, i);
	if (!p)
		return sv_err_set(err, -ENOMEM, "out of memory");
	struct sv_opts o = f->opts;
	o.format = f->e[i].fmt ? f->e[i].fmt->name : NULL;
	/* Opened outside the lock: reading a big container's index does
	 * not hold up the other containers' calls.  The tables may move. */
	struct sv_container *c = NULL;
	f->s[s].opening = true;
	/* The source classify() opened, if it is still the entry's file. */
	struct entry *e = &f->e[i];
	struct sv_source *held = take_held(f, i);
	const struct sv_format *fmt = e->fmt;
	if (held && !same_file(&held->st, &e->st)) {
		sv_source_free(held);
		held = NULL;
	}
	bool local = !f->remote;
	pthread_mutex_unlock(&f->lock);
	if (!o.format)
		rc = sv_err_set(err, -EMEDIUMTYPE, "no format claims it");
	else if (local && !path_is_real(p))
		rc = sv_err_set(err, -EMEDIUMTYPE, "a symbolic link now");
	else if (held)
		rc = sv_container_open_src(held, fmt, &o, &c, err);
	else
		rc = sv_container_open(p, &o, &c, err);
	free(p);
	pthread_mutex_lock(&f->lock);
	sl = &f->s[s];
	sl->opening = false;
	pthread_cond_broadcast(&f->opened);
	e = &f->e[i];
	if (rc && (rc == -EMEDIUMTYPE || (f->remote && bytes_fault(rc))) && e->slot == s + 1) {
		/* Not one of its format's containers after all, or one that
		 * cannot be opened: it passes through as the file it is (and
		 * the client, which took it for a directory, is told). */
		if (rc != -EMEDIUMTYPE) {
			free(e->broken);
			e->broken = strdup(err->msg);
			folder_log(f, "%s: a %s container that cannot be opened (%s): shown as the "
				   "file it is", e->rel, fmt ? fmt->name : "?", err->msg);
		}
		e->kind = E_FILE;
		e->slot = 0;
		e->raw = 0;
		if (f->live_fn)
			f->live_fn(f->live_arg, i, e->parent, e->name, true);
		return rc;
	}
	if (rc) {
		if (sl->err != rc || strcmp(sl->why, err->msg))
			folder_log(f, "%s: cannot be opened: %s", e->rel, err->msg);
		sl->err = rc;
		snprintf(sl->why, sizeof sl->why, "%s", err->msg);
		return rc;
	}
	if (install(f, i, s, c))
		return sv_err_set(err, -ENOMEM, "out of memory");
	sl = &f->s[s];
	sl->users++;
	*out = sl->c;
	return 0;
}

/*
 * The container and node an id names, for a node of a container (its
 * root: its box).  With `fresh` (a lookup, a stat, a listing, an open: a
 * call that names the node anew), its box is looked at first, and a
 * container whose file was replaced since is -ESTALE: the kernel, which
 * may hold its names a while, looks the path up again and finds the new
 * one.  Without (a read or write of a file already open), the container
 * it was opened in serves it whole.
 */
static int node_container_as(struct sv_folder *f, sv_id id, struct sv_container **c,
			     uint32_t *node, uint32_t *slot, bool fresh)
{
	uint64_t s = sv_slot_of(id);
	if (s >= f->ns || !f->s[s].c || sv_epoch_of(id) != (f->s[s].epoch & SV_EPOCH_MASK))
		return -ESTALE;
	if (fresh) {
		uint32_t box = f->s[s].box;
		if (classify(f, box) || f->e[box].slot != s + 1 || !f->s[s].c)
			return -ESTALE;
	}
	f->s[s].used = ++f->clock;
	f->s[s].used_ns = mono_ns();
	f->s[s].users++;
	*c = f->s[s].c;
	*node = (uint32_t)id;
	*slot = (uint32_t)s;
	return 0;
}

static int node_container(struct sv_folder *f, sv_id id, struct sv_container **c,
			  uint32_t *node, uint32_t *slot)
{
	return node_container_as(f, id, c, node, slot, false);
}

static int node_fresh(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
		      uint32_t *slot)
{
	return node_container_as(f, id, c, node, slot, true);
}

/* node_container for a call outside the lock: takes and lets go of it. */
static int container_of_id(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
		uint32_t *slot)
{
	pthread_mutex_lock(&f->lock);
	int rc = node_container(f, id, c, node, slot);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* A call that open_box or node_container gave a container to is
 * done with it (lock held / not held). */
static void put_locked(struct sv_folder *f, uint32_t slot)
{
	if (f->s[slot].users)
		f->s[slot].users--;
}

/* The id of node `node` of the container in slot (lock not held). */
static sv_id slot_id(struct sv_folder *f, uint32_t slot, uint32_t node)
{
	pthread_mutex_lock(&f->lock);
	uint32_t epoch = f->s[slot].epoch;
	pthread_mutex_unlock(&f->lock);
	return sv_slot_id(slot, epoch, node);
}

static void put(struct sv_folder *f, uint32_t slot)
{
	pthread_mutex_lock(&f->lock);
	put_locked(f, slot);
	pthread_mutex_unlock(&f->lock);
}

/* ---- following the folder ---------------------------------------------------- */

/*
 * Each real directory the mount has listed or looked into is watched
 * (inotify): a name created, removed, renamed, written or changed in it is
 * reported to the client (live_fn) as gone, so that the kernel drops what
 * it holds of it and asks again; asked again, the entry is judged anew.
 */
#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | \
		    IN_MODIFY | IN_ATTRIB | IN_ONLYDIR)

/* Watches real directory entry d (lock held). */
static void watch(struct sv_folder *f, uint32_t d)
{
	struct entry *e = &f->e[d];
	if (f->ifd < 0 || e->wd || e->in_raw || e->kind != E_DIR)
		return;
	/* The directory itself, reached beneath the folder (no link). */
	int dfd = sv_open_beneath(f->dfd, e->rel, O_PATH | O_DIRECTORY, 0), wd = -1;
	if (dfd >= 0) {
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", dfd);
		wd = inotify_add_watch(f->ifd, p, WATCH_MASK);
		close(dfd);
	} else {
		errno = -dfd;
	}
	if (wd < 0) {
		folder_log(f, "%s: not followed (%s): changes made outside the mount show "
			   "within a second", *e->rel ? e->rel : ".", strerror(errno));
		e->wd = -1;
		return;
	}
	if (wd >= f->nwd) {
		int n = wd * 2 + 16;
		uint32_t *v = realloc(f->wdir, (size_t)n * sizeof *v);
		if (!v) {
			inotify_rm_watch(f->ifd, wd);
			e->wd = -1;
			return;
		}
		for (int k = f->nwd; k < n; k++)
			v[k] = SV_NONE;
		f->wdir = v;
		f->nwd = n;
	}
	f->wdir[wd] = d;
	e->wd = wd;
}

static void *watch_main(void *arg)
{
	struct sv_folder *f = arg;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd pf[2] = {{f->ifd, POLLIN, 0}, {f->wake[0], POLLIN, 0}};
	for (;;) {
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		ssize_t n = read(f->ifd, buf, sizeof buf);
		if (n <= 0)
			continue;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			p += sizeof *ev + ev->len;
			pthread_mutex_lock(&f->lock);
			uint32_t d = ev->wd >= 0 && ev->wd < f->nwd ? f->wdir[ev->wd] : SV_NONE;
			if (d != SV_NONE && (ev->mask & IN_IGNORED)) {
				f->e[d].wd = 0;
				f->wdir[ev->wd] = SV_NONE;
				d = SV_NONE;
			}
			sv_tree_changed_fn fn = f->live_fn;
			void *fa = f->live_arg;
			sv_id child = SV_NONE;
			char *name = d != SV_NONE && ev->len ? strdup(ev->name) : NULL;
			if (name) {
				const char *base = f->e[d].rel;
				size_t k = strlen(base) + strlen(name) + 2;
				char *rel = malloc(k);
				if (rel) {
					snprintf(rel, k, "%s%s%s", base, *base ? "/" : "", name);
					uint32_t i = find_entry(f, rel);
					child = i == SV_NONE ? d : i;
					free(rel);
				}
			}
			pthread_mutex_unlock(&f->lock);
			if (fn && name && child != SV_NONE)
				fn(fa, child, d, name, true);
			free(name);
		}
	}
	return NULL;
}

/* Starts following the folder (lock not held): 0, or the watcher could
 * not start (the folder is then looked at as its entries expire). */
static void watch_start(struct sv_folder *f)
{
	f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (f->ifd < 0)
		return;
	if (pipe2(f->wake, O_CLOEXEC)) {
		close(f->ifd);
		f->ifd = -1;
		return;
	}
	if (pthread_create(&f->watcher, NULL, watch_main, f)) {
		close(f->ifd);
		close(f->wake[0]);
		close(f->wake[1]);
		f->ifd = -1;
		return;
	}
	f->watching = true;
}

static void watch_stop(struct sv_folder *f)
{
	if (f->watching) {
		close(f->wake[1]);
		pthread_join(f->watcher, NULL);
		close(f->wake[0]);
		f->watching = false;
	}
	if (f->ifd >= 0)
		close(f->ifd);
	f->ifd = -1;
	free(f->wdir);
	f->wdir = NULL;
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
	if (!rc && (!root || grow_hash(f) || add_entry(f, 0, root, E_DIR) != 0)) {
		free(root);
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	}
	if (!rc)
		rc = classify(f, 0) ? sv_err_set(err, -EIO, "%s: cannot be looked at", path) : 0;
	/* /.savefs/: the folder's info and log (not found by path). */
	static const struct {
		const char *rel;
		int kind;
	} meta[] = {{".savefs", E_MDIR}, {".savefs/info", E_MINFO}, {".savefs/log", E_MLOG}};
	uint32_t *slot[] = {&f->mdir, &f->minfo, &f->mlog};
	for (int k = 0; !rc && k < 3; k++) {
		char *rel = strdup(meta[k].rel);
		uint32_t i = rel ? add_entry(f, k ? f->mdir : 0, rel, meta[k].kind) : SV_NONE;
		if (i == SV_NONE) {
			free(rel);
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		} else {
			f->e[i].st = f->e[0].st;
			f->e[i].judged = true;
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
	watch_stop(f);
	for (uint32_t s = 0; s < f->ns; s++) {
		close_slot(f, s);
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
	pthread_cond_destroy(&f->opened);
	free(f);
}

int sv_folder_lookup(struct sv_folder *f, sv_id dir, const char *name, sv_id *out)
{
	struct sv_err err;
	int rc = 0;
	pthread_mutex_lock(&f->lock);
	if (dir >> 32) {
		struct sv_container *c;
		uint32_t node, slot, n;
		rc = node_fresh(f, dir, &c, &node, &slot);
		uint32_t meta = rc ? SV_NONE : f->s[slot].meta;
		uint32_t box = rc ? 0 : f->s[slot].box;
		pthread_mutex_unlock(&f->lock);
		if (!rc) {
			rc = sv_lookup_held(c, node, name, &n);
			put(f, slot);
		}
		if (!rc) {
			*out = SLOT_ID(slot, n);
			return 0;
		}
		if (rc != -ENOENT || node != meta || strcmp(name, "container"))
			return rc;
		/* NAME/.savefs/container: the raw bytes. */
		pthread_mutex_lock(&f->lock);
		struct entry *b = &f->e[box];
		if (!b->raw) {
			char *rel = strdup(b->rel);
			uint32_t r = rel ? add_entry(f, box, rel, E_RAW) : SV_NONE;
			if (r == SV_NONE) {
				free(rel);
				rc = -ENOMEM;
			} else {
				f->e[r].judged = true;
				f->e[box].raw = r; /* the table may have moved: not b */
				rc = 0;
			}
		} else {
			rc = 0;
		}
		if (!rc)
			*out = f->e[box].raw;
		pthread_mutex_unlock(&f->lock);
		return rc;
	}
	uint32_t d = (uint32_t)dir;
	if (d < f->ne && !(rc = classify(f, d)))
		probe_dir(f, d);
	if (d >= f->ne) {
		rc = -ENOENT;
	} else if (rc) {
		/* gone */
	} else if (d == 0 && !strcmp(name, ".savefs")) {
		*out = f->mdir;
	} else if (d == f->mdir) {
		rc = !strcmp(name, "info") ? 0 : !strcmp(name, "log") ? 0 : -ENOENT;
		if (!rc)
			*out = name[0] == 'i' ? f->minfo : f->mlog;
	} else if (real_dir(f, d)) {
		uint32_t i = child(f, d, name, &rc);
		if (i != SV_NONE)
			*out = i;
	} else if (f->e[d].kind == E_BOX) {
		struct sv_container *c;
		uint32_t slot, n;
		rc = open_box(f, d, &c, &slot, &err);
		bool passes = f->e[d].kind == E_FILE; /* not a container after all */
		pthread_mutex_unlock(&f->lock);
		if (rc)
			return rc == -EMEDIUMTYPE || passes ? -ENOTDIR : -EIO;
		rc = sv_lookup_held(c, SV_ROOT, name, &n);
		put(f, slot);
		if (!rc)
			*out = SLOT_ID(slot, n);
		return rc;
	} else {
		rc = -ENOTDIR;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* The client's lookups of a container's node given back, or one more
 * (a file it made); a folder's own entries are kept while it is open. */
static void hold_or_forget(struct sv_folder *f, sv_id n, uint64_t count, bool hold)
{
	if (!(n >> 32))
		return;
	struct sv_container *c;
	uint32_t node, slot;
	pthread_mutex_lock(&f->lock);
	int rc = node_container(f, n, &c, &node, &slot);
	pthread_mutex_unlock(&f->lock);
	if (rc)
		return;
	if (hold)
		sv_hold(c, node);
	else
		sv_forget(c, node, count);
	put(f, slot);
}

void sv_folder_forget(struct sv_folder *f, sv_id n, uint64_t count)
{
	hold_or_forget(f, n, count, false);
}

void sv_folder_held(struct sv_folder *f, sv_id n)
{
	hold_or_forget(f, n, 1, true);
}

/* The stat of a real file (or directory) as the tree shows it. */
static void real_stat(const struct stat *s, sv_id id, bool dir, struct sv_stat *st)
{
	memset(st, 0, sizeof *st);
	st->id = id;
	st->node = (uint32_t)id;
	st->dir = dir;
	/* A container's file shows as a directory; anything else as what it
	 * is (a symbolic link, a FIFO, a socket, a device: never opened). */
	st->mode = dir ? (S_IFDIR | (s->st_mode & 0777) | ((s->st_mode & 0444) >> 2))
		       : ((s->st_mode & S_IFMT) | (s->st_mode & 07777));
	if (S_ISDIR(s->st_mode) && dir)
		st->mode |= s->st_mode & (S_ISGID | S_ISVTX);
	st->rdev = S_ISCHR(s->st_mode) || S_ISBLK(s->st_mode) ? (uint64_t)s->st_rdev : 0;
	st->uid = s->st_uid;
	st->gid = s->st_gid;
	st->nlink = dir ? 2 : 1;
	st->size = dir ? 0 : (uint64_t)s->st_size;
	st->stream = !dir && S_ISREG(s->st_mode);
	st->mtime = s->st_mtim;
	st->atime = s->st_atim;
}

/* True if entry i is in a real directory the mount may change: not in a
 * container's raw form, and not on a read-only mount. */
static bool changeable(const struct sv_folder *f, uint32_t i)
{
	return !f->opts.read_only && !f->remote && !f->e[i].in_raw && f->e[i].kind != E_RAW &&
	       !kind_is_meta(f->e[i].kind);
}

/* The stat of a real entry (judged, lock held). */
static void entry_stat(struct sv_folder *f, uint32_t i, struct sv_stat *st)
{
	const struct entry *e = &f->e[i];
	if (e->kind == E_RAW) {
		/* The box's file, read-only (a directory container's raw
		 * form is the directory itself, beside the folder). */
		const struct entry *b = &f->e[e->parent];
		real_stat(&b->st, i, S_ISDIR(b->st.st_mode), st);
		st->mode &= ~0222u;
		st->real = !st->dir && !f->remote;
		return;
	}
	real_stat(&e->st, i, e->kind == E_DIR || e->kind == E_BOX, st);
	if (e->kind == E_BOX && e->times_set) {
		st->mtime = e->set_mtime;
		st->atime = e->set_atime;
	}
	/* A remote file is read through the tree (it has no descriptor). */
	st->real = e->kind == E_FILE && !f->remote;
	st->writable = st->real && changeable(f, i);
	if (e->in_raw)
		st->mode &= ~0222u;
}

static int folder_stat(struct sv_folder *f, sv_id n, struct sv_stat *st, bool fresh)
{
	if (n >> 32) {
		struct sv_container *c;
		uint32_t node, slot;
		pthread_mutex_lock(&f->lock);
		int rc = node_container_as(f, n, &c, &node, &slot, fresh);
		pthread_mutex_unlock(&f->lock);
		if (rc)
			return rc;
		rc = sv_stat(c, node, st);
		put(f, slot);
		if (!rc)
			st->id = n;
		return rc;
	}
	pthread_mutex_lock(&f->lock);
	uint32_t i = (uint32_t)n;
	int rc = i < f->ne ? classify(f, i) : -ENOENT;
	if (!rc) {
		const struct entry *e = &f->e[i];
		if (kind_is_meta(e->kind)) {
			/* The folder's own files: made when read (info opens every
			 * container), so of no size known before. */
			real_stat(&f->e[0].st, n, e->kind == E_MDIR, st);
			st->mode = e->kind == E_MDIR ? S_IFDIR | 0555 : S_IFREG | 0444;
			st->volatile_ = e->kind != E_MDIR;
			st->unsized = e->kind == E_MINFO;
			st->size = e->kind == E_MLOG ? f->log.len : 0;
		} else {
			entry_stat(f, i, st);
		}
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int sv_folder_stat(struct sv_folder *f, sv_id n, struct sv_stat *st)
{
	return folder_stat(f, n, st, true);
}

int sv_folder_stat_open(struct sv_folder *f, sv_id n, struct sv_stat *st)
{
	return folder_stat(f, n, st, false);
}

struct name_list {
	char **v;
	size_t n, cap;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in real directory entry d, sorted (bytewise, as savefs lists
 * names). */
static int add_name(void *arg, const char *name)
{
	struct name_list *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		char **v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n] = strdup(name)))
		return -ENOMEM;
	l->n++;
	return 0;
}

/* Removes from real directory entry d, at its first listing, the
 * temporary files that commits killed before they finished left there
 * (those nobody holds locked: a commit under way holds its own). */
static void sweep(struct sv_folder *f, uint32_t d, const struct name_list *l)
{
	if (f->e[d].swept || f->remote || f->opts.read_only || f->e[d].in_raw)
		return;
	f->e[d].swept = true;
	for (size_t i = 0; i < l->n; i++) {
		if (!commit_leftover(l->v[i]))
			continue;
		char *rel = NULL;
		struct place p;
		const char *base = f->e[d].rel;
		if (asprintf(&rel, "%s%s%s", base, *base ? "/" : "", l->v[i]) < 0 ||
		    place_open(f, rel, &p))
			continue;
		int fd = openat(p.at, p.leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) &&
		    !flock(fd, LOCK_EX | LOCK_NB) && !unlinkat(p.at, p.leaf, 0))
			folder_log(f, "%s: removed, left by a commit that did not finish", p.rel);
		if (fd >= 0)
			close(fd);
		place_close(&p);
	}
}

static int real_names(struct sv_folder *f, uint32_t d, struct name_list *l)
{
	watch(f, d);
	struct sv_err err;
	int rc = f->src->ops->place_list(f->src, f->e[d].rel, add_name, l, &err);
	if (rc && rc != -ENOMEM)
		folder_log(f, "%s", err.msg);
	if (!rc)
		sweep(f, d, l);
	if (l->n)
		qsort(l->v, l->n, sizeof *l->v, by_name);
	return rc;
}

static void names_free(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* A container's listing passed on with the tree's ids. */
struct listing_pass {
	sv_dir_fn fn;
	void *arg;
	uint32_t slot, epoch;
	uint64_t last;      /* the position after the last entry passed */
	bool stopped;
	uint64_t shift;     /* positions before the container's own entries */
};

/* A listing's callback said to stop (not: go on, or go on holding). */
static bool dir_stop(int r)
{
	return r && r != SV_DIR_HELD;
}

static int pass_entry(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct listing_pass *r = arg;
	struct sv_stat s = *st;
	s.id = st->unmade ? SV_TREE_NONE : sv_slot_id(r->slot, r->epoch, st->node);
	r->last = next + r->shift;
	int rc = r->fn(r->arg, name, &s, next + r->shift);
	r->stopped = dir_stop(rc);
	return rc;
}


/* Entries judged at once, JUDGE_AT_ONCE at a time. */
#define JUDGE_AT_ONCE 8

struct judging {
	struct sv_folder *f;
	uint32_t d;
	const struct name_list *l;
	size_t next;  /* the next name to classify (atomic) */
};

static void *classify_worker(void *arg)
{
	struct judging *j = arg;
	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (i >= j->l->n)
			break;
		int e;
		pthread_mutex_lock(&j->f->lock);
		child(j->f, j->d, j->l->v[i], &e);
		pthread_mutex_unlock(&j->f->lock);
	}
	return NULL;
}

/* How many of the names of directory d from `from` on were never judged
 * (lock held). */
static size_t unjudged(struct sv_folder *f, uint32_t d, const struct name_list *l, size_t from)
{
	size_t count = 0;
	const char *base = f->e[d].rel;
	for (size_t i = from; i < l->n; i++) {
		char *rel = NULL;
		if (asprintf(&rel, "%s%s%s", base, *base ? "/" : "", l->v[i]) < 0)
			return l->n - from;
		uint32_t k = find_entry(f, rel);
		count += k == SV_NONE || !f->e[k].judged;
		free(rel);
	}
	return count;
}

/* The entries of directory d from `from` on judged (lock not held), by
 * as many threads as there are cores (two at least) when several were
 * never judged. */
static void classify_names(struct sv_folder *f, uint32_t d, const struct name_list *l, size_t from)
{
	struct judging j = {f, d, l, from};
	pthread_t t[JUDGE_AT_ONCE - 1];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	size_t most = cores < 2 ? 2 : cores > JUDGE_AT_ONCE ? JUDGE_AT_ONCE : (size_t)cores;
	pthread_mutex_lock(&f->lock);
	size_t todo = unjudged(f, d, l, from);
	pthread_mutex_unlock(&f->lock);
	size_t n = 0;
	while (todo > 1 && n < most - 1 && n + 1 < todo &&
	       !pthread_create(&t[n], NULL, classify_worker, &j))
		n++;
	classify_worker(&j);
	for (size_t k = 0; k < n; k++)
		pthread_join(t[k], NULL);
}

int sv_folder_readdir(struct sv_folder *f, sv_id dir, uint64_t from, sv_dir_fn fn, void *arg,
		      bool nodes)
{
	struct sv_err err;
	struct sv_container *c = NULL;
	uint32_t node = SV_ROOT, slot = 0, meta = SV_NONE;
	pthread_mutex_lock(&f->lock);
	int rc = 0;
	if (dir >> 32) {
		rc = node_fresh(f, dir, &c, &node, &slot);
		if (!rc)
			meta = f->s[slot].meta;
	} else if ((uint32_t)dir >= f->ne) {
		rc = -ENOENT;
	} else if (!(rc = classify(f, (uint32_t)dir))) {
		uint32_t d = (uint32_t)dir;
		probe_dir(f, d);
		if (f->e[d].kind == E_BOX) {
			rc = open_box(f, d, &c, &slot, &err);
			if (rc)
				rc = rc == -EMEDIUMTYPE ? -ENOTDIR : -EIO;
			meta = rc ? SV_NONE : f->s[slot].meta;
		} else if (!real_dir(f, d) && d != f->mdir) {
			rc = -ENOTDIR;
		}
	}
	if (rc || c) {
		uint32_t epoch = rc ? 0 : f->s[slot].epoch;
		bool removed = !rc && f->s[slot].removed;
		pthread_mutex_unlock(&f->lock);
		if (rc)
			return rc;
		if (removed) {
			/* Its file was removed through the mount (rm -r's first
			 * step): nothing is left in it. */
			put(f, slot);
			return 0;
		}
		/* NAME/.savefs/container first (rm -r removes the container
		 * at its first step, and finds the rest gone with it). */
		uint64_t shift = node == meta ? 1 : 0;
		sv_id raw;
		struct sv_stat st;
		if (shift && from == 0) {
			put(f, slot);
			if (sv_folder_lookup(f, SLOT_ID(slot, meta), "container", &raw) ||
			    sv_folder_stat(f, raw, &st) || dir_stop(fn(arg, "container", &st, 1)))
				return 0;
			pthread_mutex_lock(&f->lock);
			rc = node_container(f, dir, &c, &node, &slot);
			pthread_mutex_unlock(&f->lock);
			if (rc)
				return 0;
		}
		struct listing_pass r = {fn, arg, slot, epoch, from, false, shift};
		rc = (nodes ? sv_readdir_nodes : sv_readdir)(c, node, from > shift ? from - shift : 0,
							     pass_entry, &r);
		put(f, slot);
		return rc;
	}
	uint32_t d = (uint32_t)dir;
	if (d == f->mdir) {
		static const char *const names[] = {"info", "log"};
		pthread_mutex_unlock(&f->lock);
		for (uint64_t k = from; k < 2; k++) {
			struct sv_stat st;
			if (sv_folder_stat(f, k ? f->mlog : f->minfo, &st) ||
			    dir_stop(fn(arg, names[k], &st, k + 1)))
				break;
		}
		return 0;
	}
	/* The root lists /.savefs/ first (as a container does). */
	uint64_t shift = d == 0 ? 1 : 0;
	if (d == 0 && from == 0) {
		struct sv_stat st;
		pthread_mutex_unlock(&f->lock);
		if (sv_folder_stat(f, f->mdir, &st) || dir_stop(fn(arg, ".savefs", &st, 1)))
			return 0;
		pthread_mutex_lock(&f->lock);
	}
	if (from >= shift)
		from -= shift;
	/* A real directory: its entries as they are now. */
	struct name_list l = {0};
	rc = real_names(f, d, &l);
	if (!rc && !f->remote && l.n > from + 1) {
		/* Each local entry judged new costs an open (its container
		 * confirmed): several at once.  (A remote one is judged by its
		 * name: no request.) */
		pthread_mutex_unlock(&f->lock);
		classify_names(f, d, &l, from);
		pthread_mutex_lock(&f->lock);
	}
	struct item {
		char *name;
		struct sv_stat st;
		uint64_t next;
	} *items = rc ? NULL : calloc(l.n ? l.n : 1, sizeof *items);
	size_t k = 0;
	if (!rc && !items)
		rc = -ENOMEM;
	for (size_t i = from; !rc && i < l.n; i++) {
		int e;
		uint32_t ci = child(f, d, l.v[i], &e);
		if (ci == SV_NONE)
			continue; /* gone since the listing, or not a name savefs shows */
		entry_stat(f, ci, &items[k].st);
		items[k].next = i + 1 + shift;
		items[k].name = l.v[i];
		k++;
	}
	pthread_mutex_unlock(&f->lock);
	for (size_t j = 0; !rc && j < k; j++) {
		if (dir_stop(fn(arg, items[j].name, &items[j].st, items[j].next)))
			break;
	}
	free(items);
	names_free(&l);
	return rc;
}

/* Reads a real file's bytes: n at off (short at its end). */
static int real_read(struct sv_folder *f, uint32_t i, uint64_t off, void *buf, size_t size,
		     size_t *got, struct sv_err *err)
{
	pthread_mutex_lock(&f->lock);
	char *rel = strdup(f->e[i].rel);
	pthread_mutex_unlock(&f->lock);
	if (!rel)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = f->src->ops->place_read(f->src, rel, off, buf, size, got, err);
	free(rel);
	return rc;
}

/* The real file behind entry n (a file that passes through, or a raw
 * container), or SV_NONE with the error. */
static uint32_t real_file(struct sv_folder *f, sv_id n, int *rc)
{
	uint32_t i = (uint32_t)n;
	*rc = i < f->ne ? classify(f, i) : -ENOENT;
	if (*rc)
		return SV_NONE;
	int kind = f->e[i].kind;
	if (kind == E_RAW && !real_dir(f, i))
		return f->e[i].parent;
	if (kind != E_FILE) {
		*rc = -EISDIR;
		return SV_NONE;
	}
	return i;
}

/* The content of the folder's own /.savefs files. */
static int meta_content(struct sv_folder *f, uint32_t i, struct sv_blob **out,
			struct sv_err *err)
{
	if (f->e[i].kind == E_MINFO)
		return sv_folder_info(f, out, err);
	pthread_mutex_lock(&f->lock);
	*out = sv_blob_dup(f->log.p, f->log.len);
	pthread_mutex_unlock(&f->lock);
	return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
}

static bool is_meta_file(struct sv_folder *f, sv_id n)
{
	return n == f->minfo || n == f->mlog;
}

int sv_folder_read(struct sv_folder *f, sv_id n, uint64_t off, void *buf, size_t size,
		   size_t *got, struct sv_err *err)
{
	if (is_meta_file(f, n)) {
		/* A reader of info gets one snapshot, made at offset 0 (making it
		 * opens every container): not one per piece. */
		struct sv_blob *b = NULL;
		int rc = 0;
		pthread_mutex_lock(&f->lock);
		if (n == f->minfo && off > 0 && f->info)
			b = sv_blob_ref(f->info);
		pthread_mutex_unlock(&f->lock);
		if (!b)
			rc = meta_content(f, (uint32_t)n, &b, err);
		if (rc)
			return rc;
		if (n == f->minfo && off == 0) {
			pthread_mutex_lock(&f->lock);
			sv_blob_unref(f->info);
			f->info = sv_blob_ref(b);
			pthread_mutex_unlock(&f->lock);
		}
		*got = off < b->len ? (b->len - off < size ? (size_t)(b->len - off) : size) : 0;
		if (*got)
			memcpy(buf, b->data + off, *got);
		sv_blob_unref(b);
		return 0;
	}
	if (n >> 32) {
		struct sv_container *c;
		uint32_t node, slot;
		int rc = container_of_id(f, n, &c, &node, &slot);
		if (rc)
			return sv_err_set(err, rc, "a container closed under its reader");
		rc = sv_read(c, node, off, buf, size, got, err);
		put(f, slot);
		return rc;
	}
	pthread_mutex_lock(&f->lock);
	int rc;
	uint32_t i = real_file(f, n, &rc);
	if (i != SV_NONE && f->remote && f->e[i].kind == E_BOX) {
		/* A remote container's raw bytes: through its own source, whose
		 * blocks its tree has read (not a request per read). */
		struct sv_container *c;
		uint32_t slot;
		rc = open_box(f, i, &c, &slot, err);
		pthread_mutex_unlock(&f->lock);
		if (rc == -EMEDIUMTYPE)
			return real_read(f, i, off, buf, size, got, err);
		if (rc)
			return rc;
		*got = 0;
		uint64_t end = sv_container_size(c);
		size_t k = off >= end ? 0 : end - off < size ? (size_t)(end - off) : size;
		rc = k ? sv_container_pread(c, off, buf, k, err) : 0;
		if (!rc)
			*got = k;
		put(f, slot);
		return rc;
	}
	pthread_mutex_unlock(&f->lock);
	if (i == SV_NONE)
		return sv_err_set(err, rc, "%s", strerror(-rc));
	return real_read(f, i, off, buf, size, got, err);
}

int sv_folder_content(struct sv_folder *f, sv_id n, struct sv_blob **out, struct sv_err *err)
{
	*out = NULL;
	if (is_meta_file(f, n))
		return meta_content(f, (uint32_t)n, out, err);
	if (n >> 32) {
		struct sv_container *c;
		uint32_t node, slot;
		int rc = container_of_id(f, n, &c, &node, &slot);
		if (rc)
			return sv_err_set(err, rc, "a container closed under its reader");
		rc = sv_content(c, node, out, err);
		put(f, slot);
		return rc;
	}
	pthread_mutex_lock(&f->lock);
	int rc;
	uint32_t i = real_file(f, n, &rc);
	uint64_t size = i == SV_NONE ? 0 : (uint64_t)f->e[i].st.st_size;
	pthread_mutex_unlock(&f->lock);
	if (i == SV_NONE)
		return sv_err_set(err, rc, "%s", strerror(-rc));
	if (size > f->opts.max_decode)
		return sv_err_set(err, -EFBIG, "%llu bytes, more than -o maxdecode: read it in "
				  "pieces", (unsigned long long)size);
	struct sv_blob *b = sv_blob_new((size_t)size);
	if (!b)
		return sv_err_set(err, -ENOMEM, "out of memory");
	size_t got = 0;
	rc = real_read(f, i, 0, b->data, (size_t)size, &got, err);
	if (!rc && got != size)
		rc = sv_err_set(err, -EIO, "%s changed while it was read", f->e[i].rel);
	if (rc) {
		sv_blob_unref(b);
		return rc;
	}
	*out = b;
	return 0;
}

int sv_folder_hold(struct sv_folder *f, sv_id n)
{
	if (!(n >> 32))
		return 0; /* a real file: nothing to keep open */
	struct sv_container *c;
	uint32_t node, slot;
	pthread_mutex_lock(&f->lock);
	int rc = node_fresh(f, n, &c, &node, &slot);
	if (!rc) {
		rc = sv_open(c, node); /* under the lock: not closed meanwhile */
		put_locked(f, slot);
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void sv_folder_release(struct sv_folder *f, sv_id n)
{
	if (!(n >> 32))
		return;
	struct sv_container *c;
	uint32_t node, slot;
	pthread_mutex_lock(&f->lock);
	if (!node_container(f, n, &c, &node, &slot)) {
		sv_release(c, node);
		put_locked(f, slot);
	}
	pthread_mutex_unlock(&f->lock);
}

/* ---- info ------------------------------------------------------------------------ */

struct info_count {
	struct sv_folder *f;
	json_t *per_format, *containers, *unclaimed, *unreadable;
	uint64_t ncontainers;
};

static int walk_dir(struct info_count *cs, uint32_t d);

static int count_entry(void *arg, const char *name, const struct sv_stat *st, uint64_t next)
{
	struct info_count *cs = arg;
	struct sv_folder *f = cs->f;
	pthread_mutex_lock(&f->lock);
	uint32_t i = (uint32_t)st->id;
	int kind = f->e[i].kind;
	const struct sv_format *fmt = f->e[i].fmt;
	char *rel = strdup(f->e[i].rel);
	char *broken = f->e[i].broken ? strdup(f->e[i].broken) : NULL;
	pthread_mutex_unlock(&f->lock);
	if (!rel) {
		free(broken);
		return 1;
	}
	if (kind == E_DIR) {
		walk_dir(cs, i);
	} else if (kind == E_FILE && broken && fmt) {
		/* Claimed by its content, but its container cannot be opened:
		 * it passes through, and here is why. */
		json_t *one = json_object();
		json_object_set_new(one, "path", json_string(rel));
		json_object_set_new(one, "format", json_string(fmt->name));
		json_object_set_new(one, "error", json_string(broken));
		json_array_append_new(cs->unreadable, one);
	} else if (kind == E_FILE) {
		json_array_append_new(cs->unclaimed, json_string(rel));
	} else if (kind == E_BOX) {
		json_t *one = json_object();
		json_object_set_new(one, "path", json_string(rel));
		json_object_set_new(one, "format", json_string(fmt->name));
		json_t *n = json_object_get(cs->per_format, fmt->name);
		json_object_set_new(cs->per_format, fmt->name,
				    json_integer(n ? json_integer_value(n) + 1 : 1));
		struct sv_err err;
		struct sv_container *c;
		uint32_t slot, meta;
		pthread_mutex_lock(&f->lock);
		int rc = open_box(f, i, &c, &slot, &err);
		pthread_mutex_unlock(&f->lock);
		struct sv_blob *b = NULL;
		if (rc) {
			json_object_set_new(one, "error", json_string(err.msg));
		} else {
			if (!sv_resolve(c, ".savefs/info", &meta) && !sv_content(c, meta, &b, &err)) {
				json_t *info = json_loadb((const char *)b->data, b->len, 0, NULL);
				json_t *w = json_object_get(info, "warnings");
				json_object_set_new(one, "warnings", w ? json_incref(w) : json_array());
				json_decref(info);
			}
			put(f, slot);
		}
		sv_blob_unref(b);
		json_array_append_new(cs->containers, one);
		cs->ncontainers++;
	}
	free(rel);
	free(broken);
	return 0;
}

static int walk_dir(struct info_count *cs, uint32_t d)
{
	return sv_folder_readdir(cs->f, d, 0, count_entry, cs, false);
}

int sv_folder_info(struct sv_folder *f, struct sv_blob **out, struct sv_err *err)
{
	struct info_count cs = {f, json_object(), json_array(), json_array(), json_array(), 0};
	json_t *o = json_object();
	/* How many were open when asked (the walk below opens every one). */
	pthread_mutex_lock(&f->lock);
	unsigned open_now = f->nopen;
	pthread_mutex_unlock(&f->lock);
	int rc = cs.per_format && cs.containers && cs.unclaimed && cs.unreadable && o ? 0 : -ENOMEM;
	if (!rc)
		rc = walk_dir(&cs, 0);
	if (!rc) {
		json_object_set_new(o, "folder", json_string(f->path));
		json_object_set_new(o, "containers", json_integer((json_int_t)cs.ncontainers));
		json_object_set_new(o, "open", json_integer(open_now));
		json_object_set_new(o, "max_open", json_integer(f->opts.max_open));
		json_object_set(o, "per_format", cs.per_format);
		json_object_set(o, "unclaimed", cs.unclaimed);
		json_object_set(o, "unreadable", cs.unreadable);
		json_object_set(o, "each", cs.containers);
	}
	json_decref(cs.per_format);
	json_decref(cs.containers);
	json_decref(cs.unclaimed);
	json_decref(cs.unreadable);
	char *s = rc ? NULL : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return sv_err_set(err, rc ? rc : -ENOMEM, "the folder could not be listed");
	size_t n = strlen(s);
	*out = sv_blob_new(n + 1);
	if (*out) {
		memcpy((*out)->data, s, n);
		(*out)->data[n] = '\n';
	}
	free(s);
	return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
}

/* ---- edits ------------------------------------------------------------------------ */

/*
 * The container a tree id is in, taken (put() when done): a container's
 * node, or a box (its root).  0, 1 if id is a real entry of the folder
 * (*node its entry), or -errno.
 */
static int take_as(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
		   uint32_t *slot, bool fresh, struct sv_err *err)
{
	*node = 0;
	*slot = 0;
	pthread_mutex_lock(&f->lock);
	int rc;
	if (id >> 32) {
		rc = node_container_as(f, id, c, node, slot, fresh);
		if (rc)
			sv_err_set(err, rc, "a container closed or replaced under its user");
	} else if ((uint32_t)id >= f->ne) {
		rc = sv_err_set(err, -ENOENT, "no such file");
	} else if ((rc = classify(f, (uint32_t)id))) {
		sv_err_set(err, rc, "%s", strerror(-rc));
	} else if (f->e[id].kind == E_BOX) {
		rc = open_box(f, (uint32_t)id, c, slot, err);
		if (rc)
			rc = sv_err_set(err, rc == -EMEDIUMTYPE ? -ENOTDIR : -EIO, "%s", err->msg);
		*node = SV_ROOT;
	} else {
		*node = (uint32_t)id;
		rc = 1;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* take_as for a change naming a place anew (a new name, a removal, a
 * rename), and for a change of a file already open. */
static int take(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
		uint32_t *slot, struct sv_err *err)
{
	return take_as(f, id, c, node, slot, true, err);
}

static int take_open(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
		     uint32_t *slot, struct sv_err *err)
{
	return take_as(f, id, c, node, slot, false, err);
}

/* A container's changes forwarded to the client, by tree id. */
static struct sv_forward forward_for(struct sv_folder *f, uint32_t slot, sv_tree_changed_fn fn,
				 void *arg)
{
	pthread_mutex_lock(&f->lock);
	struct sv_forward r = {fn, arg, f->s[slot].box, slot, f->s[slot].epoch};
	pthread_mutex_unlock(&f->lock);
	return r;
}

void sv_folder_set_notify(struct sv_folder *f, sv_tree_changed_fn fn, void *arg)
{
	pthread_mutex_lock(&f->lock);
	f->live_fn = fn;
	f->live_arg = arg;
	bool start = fn && !f->watching && !f->remote; /* a store tells no changes */
	pthread_mutex_unlock(&f->lock);
	/* Followed while a client listens (the daemon; not a command). */
	if (start)
		watch_start(f);
	else if (!fn)
		watch_stop(f);
}

/* The refusal of a change to a real entry that cannot be changed. */
static int not_here(struct sv_folder *f, struct sv_err *err)
{
	if (f->remote && !f->opts.read_only)
		return sv_err_set(err, -EROFS, "an %s's own files and directories are read-only "
				  "(its containers are written)", f->src->ops->kind);
	return f->opts.read_only ? sv_err_set(err, -EROFS, "mounted read-only")
				 : sv_err_set(err, -EPERM, "a container's raw form is read-only");
}

int sv_folder_write(struct sv_folder *f, sv_id n, uint64_t off, const void *buf, size_t size,
		    struct sv_err *err)
{
	struct sv_container *c;
	uint32_t node, slot;
	int rc = take_open(f, n, &c, &node, &slot, err);
	if (rc == 1) /* a real file is written through its descriptor */
		return sv_err_set(err, -EBADF, "a file that passes through is written as itself");
	if (rc)
		return rc;
	rc = sv_write(c, node, off, buf, size, err);
	put(f, slot);
	return rc;
}

int sv_folder_truncate(struct sv_folder *f, sv_id n, uint64_t size, struct sv_err *err)
{
	struct sv_container *c;
	uint32_t node, slot;
	int rc = take_open(f, n, &c, &node, &slot, err);
	if (rc == 1) {
		pthread_mutex_lock(&f->lock);
		bool ok = f->e[node].kind == E_FILE && changeable(f, node);
		bool dir = f->e[node].kind != E_FILE && f->e[node].kind != E_RAW;
		pthread_mutex_unlock(&f->lock);
		if (!ok)
			return dir ? sv_err_set(err, -EISDIR, "is a directory") : not_here(f, err);
		pthread_mutex_lock(&f->lock);
		char *rel = strdup(f->e[node].rel);
		pthread_mutex_unlock(&f->lock);
		int fd = rel ? sv_open_beneath(f->dfd, rel, O_WRONLY | O_NONBLOCK | O_NOCTTY, 0)
			     : -ENOMEM;
		free(rel);
		struct stat st;
		rc = fd < 0 ? fd : fstat(fd, &st) ? -errno : !S_ISREG(st.st_mode) ? -EINVAL
		     : ftruncate(fd, (off_t)size) ? -errno : 0;
		if (fd >= 0)
			close(fd);
		return rc ? sv_err_set(err, rc, "%s", strerror(-rc)) : 0;
	}
	if (rc)
		return rc;
	rc = sv_truncate(c, node, size, err);
	put(f, slot);
	return rc;
}

int sv_folder_flush(struct sv_folder *f, sv_id n, sv_tree_changed_fn fn, void *arg,
		    struct sv_err *err)
{
	struct sv_container *c;
	uint32_t node, slot;
	int rc = take_open(f, n, &c, &node, &slot, err);
	if (rc == 1)
		return 0;
	if (rc)
		return rc;
	struct sv_forward r = forward_for(f, slot, fn, arg);
	rc = sv_flush(c, node, sv_forward_fn(), &r, err);
	put(f, slot);
	return rc;
}

int sv_folder_commit(struct sv_folder *f, sv_tree_changed_fn fn, void *arg, struct sv_err *err)
{
	int first = 0;
	pthread_mutex_lock(&f->lock);
	uint32_t ns = f->ns;
	pthread_mutex_unlock(&f->lock);
	for (uint32_t s = 0; s < ns; s++) {
		pthread_mutex_lock(&f->lock);
		struct sv_container *c = f->s[s].c;
		if (c)
			f->s[s].users++;
		pthread_mutex_unlock(&f->lock);
		if (!c)
			continue;
		struct sv_forward r = forward_for(f, s, fn, arg);
		struct sv_err e1;
		int rc = sv_commit(c, sv_forward_fn(), &r, &e1);
		if (rc && !first) {
			first = rc;
			*err = e1;
		}
		put(f, s);
	}
	return first;
}

/* The entry of name in real directory entry dir (judged), for a change
 * there: its index, SV_NONE with *rc (-ENOENT if it is not there). */
static uint32_t real_child(struct sv_folder *f, uint32_t dir, const char *name, int *rc,
			   struct sv_err *err)
{
	pthread_mutex_lock(&f->lock);
	uint32_t i = child(f, dir, name, rc);
	pthread_mutex_unlock(&f->lock);
	if (i == SV_NONE)
		sv_err_set(err, *rc, "%s", strerror(-*rc));
	return i;
}

/* The kind of entry i (lock not held). */
static int kind_of(struct sv_folder *f, uint32_t i)
{
	pthread_mutex_lock(&f->lock);
	int kind = f->e[i].kind;
	pthread_mutex_unlock(&f->lock);
	return kind;
}

/* The real directory entry dir as a place for changes: its path
 * relative to the folder ("." for the root) joined with name, or NULL
 * with *rc. */
static char *real_place(struct sv_folder *f, uint32_t dir, const char *name, int *rc,
			struct sv_err *err)
{
	*rc = 0;
	pthread_mutex_lock(&f->lock);
	if (dir >= f->ne || classify(f, dir))
		*rc = sv_err_set(err, -ENOENT, "no such directory");
	else if (!real_dir(f, dir))
		*rc = sv_err_set(err, -ENOTDIR, "not a directory");
	else if (!changeable(f, dir) || (dir == 0 && !strcmp(name, ".savefs")))
		*rc = not_here(f, err);
	else if (!sv_real_name_ok(name) || hidden_name(dir, name))
		*rc = sv_err_set(err, -EINVAL, "not a name savefs shows");
	char *rel = NULL;
	if (!*rc) {
		const char *base = f->e[dir].rel;
		size_t n = strlen(base) + strlen(name) + 2;
		rel = malloc(n);
		if (rel)
			snprintf(rel, n, "%s%s%s", base, *base ? "/" : "", name);
		else
			*rc = sv_err_set(err, -ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&f->lock);
	return rel;
}

/*
 * A file or directory just made at p (fd its descriptor, or -1) takes
 * the mode asked for exactly (the caller's umask was applied by the
 * kernel; the daemon's own must not apply again) and, when the daemon may
 * give files away (it runs as root), the caller's owner, and its group
 * unless the directory hands down its own (set-group-ID).
 */
static int give_to(const struct place *p, int fd, uint32_t mode, const struct sv_owner *who)
{
	struct stat st, ps;
	if (fd >= 0 ? fstat(fd, &st) : fstatat(p->at, p->leaf, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISLNK(st.st_mode)) {
		/* A directory made in a set-group-ID one keeps the bit. */
		mode_t want = (mode & 07777) | (S_ISDIR(st.st_mode) ? st.st_mode & S_ISGID : 0);
		if ((st.st_mode & 07777) != want &&
		    (fd >= 0 ? fchmod(fd, want) : fchmodat(p->at, p->leaf, want, 0)))
			return -errno;
	}
	if (!who || geteuid() != 0)
		return 0;
	bool inherit = !fstatat(p->at, "", &ps, AT_EMPTY_PATH) && (ps.st_mode & S_ISGID);
	uid_t uid = who->uid;
	gid_t gid = inherit ? st.st_gid : who->gid;
	if (st.st_uid == uid && st.st_gid == gid)
		return 0;
	if (fd >= 0 ? fchown(fd, uid, gid) : fchownat(p->at, p->leaf, uid, gid, AT_SYMLINK_NOFOLLOW))
		return -errno;
	return 0;
}

int sv_folder_create(struct sv_folder *f, sv_id dir, const char *name, uint32_t mode, int flags,
		     const struct sv_owner *who, sv_id *out, int *fd, struct sv_err *err)
{
	*fd = -1;
	struct sv_container *c;
	uint32_t node, slot, n;
	int rc = take(f, dir, &c, &node, &slot, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		rc = sv_create(c, node, name, mode, &n, err);
		if (!rc)
			*out = SLOT_ID(slot, n);
		put(f, slot);
		return rc;
	}
	char *rel = real_place(f, node, name, &rc, err);
	struct place p;
	if (!rel || (rc = place_open(f, rel, &p)))
		return rel ? sv_err_set(err, rc, "%s", strerror(-rc)) : rc;
	int k = openat(p.at, p.leaf, (flags & ~O_CREAT) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		       mode & 07777);
	if (k < 0) {
		rc = -errno;
		place_close(&p);
		return sv_err_set(err, rc, "%s", strerror(-rc));
	}
	rc = give_to(&p, k, mode, who);
	if (rc) {
		/* Made, but not as asked: it goes again (nobody saw it). */
		unlinkat(p.at, p.leaf, 0);
		place_close(&p);
		close(k);
		return sv_err_set(err, rc, "the new file could not be given its owner or mode: %s",
				  strerror(-rc));
	}
	place_close(&p);
	pthread_mutex_lock(&f->lock);
	uint32_t i = child(f, node, name, &rc);
	if (i != SV_NONE && (flags & O_ACCMODE) != O_RDONLY && f->e[i].kind == E_FILE)
		f->e[i].writers++;
	pthread_mutex_unlock(&f->lock);
	if (i == SV_NONE) {
		close(k);
		return sv_err_set(err, rc, "%s", strerror(-rc));
	}
	*out = i;
	*fd = k;
	return 0;
}

/* The real directory entry dir is (*node), for a change only a real
 * directory takes: 0, or the refusal (`why`) if it is a container's. */
static int real_dir_of(struct sv_folder *f, sv_id dir, uint32_t *node, const char *why,
		       struct sv_err *err)
{
	struct sv_container *c;
	uint32_t slot;
	int rc = take(f, dir, &c, node, &slot, err);
	if (rc < 0)
		return rc;
	if (rc == 1)
		return 0;
	bool ro = sv_container_read_only(c);
	pthread_mutex_lock(&f->lock);
	bool removed = f->s[slot].removed;
	pthread_mutex_unlock(&f->lock);
	put(f, slot);
	if (removed)
		return 2; /* the container's file was removed through the mount */
	return sv_err_set(err, ro ? -EROFS : -EPERM, "%s", why);
}

int sv_folder_mkdir(struct sv_folder *f, sv_id dir, const char *name, uint32_t mode,
		    const struct sv_owner *who, sv_id *out, struct sv_err *err)
{
	uint32_t node;
	int rc = real_dir_of(f, dir, &node, "a container takes no new directories", err);
	if (rc)
		return rc == 2 ? sv_err_set(err, -ENOENT, "removed") : rc;
	char *rel = real_place(f, node, name, &rc, err);
	struct place p;
	if (!rel || (rc = place_open(f, rel, &p)))
		return rel ? sv_err_set(err, rc, "%s", strerror(-rc)) : rc;
	rc = mkdirat(p.at, p.leaf, mode & 07777) ? -errno : 0;
	if (!rc && (rc = give_to(&p, -1, mode, who)))
		unlinkat(p.at, p.leaf, AT_REMOVEDIR);
	place_close(&p);
	if (rc)
		return sv_err_set(err, rc, "%s", strerror(-rc));
	uint32_t i = real_child(f, node, name, &rc, err);
	if (i == SV_NONE)
		return rc;
	*out = i;
	return 0;
}

/* Removes the real file (or, with AT_REMOVEDIR, directory) name of real
 * directory dir. */
static int real_remove(struct sv_folder *f, uint32_t dir, const char *name, int how,
		       struct sv_err *err)
{
	int rc;
	char *rel = real_place(f, dir, name, &rc, err);
	struct place p;
	if (!rel || (rc = place_open(f, rel, &p)))
		return rel ? sv_err_set(err, rc, "%s", strerror(-rc)) : rc;
	rc = unlinkat(p.at, p.leaf, how) ? -errno : 0;
	place_close(&p);
	return rc ? sv_err_set(err, rc, "%s", strerror(-rc)) : 0;
}

/* A removal in the raw form of a directory container (real directory
 * entry d, in it) was refused: rm -r of the container goes on to its
 * entries, which are refused too for a while (a recording's chunks would
 * otherwise go one by one). */
static void guard_raw(struct sv_folder *f, uint32_t d)
{
	pthread_mutex_lock(&f->lock);
	while (d && f->e[d].kind != E_RAW && f->e[d].in_raw)
		d = f->e[d].parent;
	if (f->e[d].kind == E_RAW) {
		uint32_t box = f->e[d].parent;
		if (f->e[box].slot)
			f->s[f->e[box].slot - 1].guard_ns = mono_ns() + GHOST_NS;
	}
	pthread_mutex_unlock(&f->lock);
}

int sv_folder_unlink(struct sv_folder *f, sv_id dir, const char *name, sv_tree_changed_fn fn,
		     void *arg, struct sv_err *err)
{
	struct sv_container *c;
	uint32_t node, slot;
	int rc = take(f, dir, &c, &node, &slot, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		pthread_mutex_lock(&f->lock);
		bool raw = node == f->s[slot].meta && !strcmp(name, "container");
		uint32_t box = f->s[slot].box;
		bool removed = f->s[slot].removed;
		bool guarded = mono_ns() < f->s[slot].guard_ns;
		pthread_mutex_unlock(&f->lock);
		if (removed) {
			put(f, slot);
			return 0; /* gone with its container (rm -r's later steps) */
		}
		if (guarded && !raw) {
			put(f, slot);
			return sv_err_set(err, -EPERM, "a directory container is not removed through "
					  "the mount, nor emptied entry by entry: remove it outside");
		}
		if (!raw) {
			struct sv_forward r = forward_for(f, slot, fn, arg);
			rc = sv_unlink(c, node, name, sv_forward_fn(), &r, err);
			put(f, slot);
			return rc;
		}
		put(f, slot);
		/* NAME/.savefs/container: the container's file goes from the
		 * folder (its open files keep reading what they read). */
		pthread_mutex_lock(&f->lock);
		bool file = S_ISREG(f->e[box].st.st_mode);
		uint32_t parent = f->e[box].parent;
		char *bname = strdup(f->e[box].name);
		pthread_mutex_unlock(&f->lock);
		if (!bname)
			return sv_err_set(err, -ENOMEM, "out of memory");
		rc = file ? real_remove(f, parent, bname, 0, err)
			  : sv_err_set(err, -EISDIR, "a directory container is removed as "
				       "a directory, outside the mount");
		if (!rc) {
			/* rm -r NAME goes on: NAME is an empty directory until
			 * its own rmdir, and whatever rm removes in it next is
			 * gone already. */
			pthread_mutex_lock(&f->lock);
			folder_log(f, "%s: removed", f->e[box].rel);
			f->e[box].ghost_ns = mono_ns() + GHOST_NS;
			if (f->e[box].slot == slot + 1)
				f->s[slot].removed = true;
			pthread_mutex_unlock(&f->lock);
		}
		free(bname);
		return rc;
	}
	uint32_t i = real_child(f, node, name, &rc, err);
	if (i == SV_NONE)
		return rc;
	if (kind_of(f, i) != E_FILE)
		return sv_err_set(err, -EISDIR, "is a directory");
	rc = real_remove(f, node, name, 0, err);
	if (rc == -EPERM)
		guard_raw(f, node);
	return rc;
}

int sv_folder_rmdir(struct sv_folder *f, sv_id dir, const char *name, struct sv_err *err)
{
	uint32_t node;
	int rc = real_dir_of(f, dir, &node, "a container's directories are its own", err);
	if (rc == 2)
		return 0; /* in a container removed through the mount */
	if (rc)
		return rc;
	uint32_t i = real_child(f, node, name, &rc, err);
	if (i == SV_NONE)
		return rc;
	pthread_mutex_lock(&f->lock);
	int kind = f->e[i].kind;
	if (f->e[i].ghost_ns) {
		/* The last step of rm -r NAME: NAME's file is gone already. */
		struct entry *e = &f->e[i];
		e->ghost_ns = 0;
		e->judged = false;
		if (e->slot)
			supersede(f, e->slot - 1);
		e->slot = 0;
		e->raw = 0;
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	bool file_box = kind == E_BOX && S_ISREG(f->e[i].st.st_mode);
	if (file_box)
		folder_log(f, "%s: a container is not removed as a directory: remove "
			   "%s/.savefs/container", f->e[i].rel, name);
	pthread_mutex_unlock(&f->lock);
	if (kind == E_FILE)
		return sv_err_set(err, -ENOTDIR, "not a directory");
	if (file_box)
		return sv_err_set(err, -ENOTEMPTY, "a container: remove its .savefs/container");
	rc = real_remove(f, node, name, AT_REMOVEDIR, err);
	if (rc == -EPERM)
		guard_raw(f, i);
	return rc;
}

int sv_folder_rename(struct sv_folder *f, sv_id dir, const char *name, sv_id newdir,
		     const char *newname, uint32_t flags, sv_tree_changed_fn fn, void *arg,
		     struct sv_err *err)
{
	struct sv_container *c1, *c2;
	uint32_t n1, n2, s1, s2;
	int r1 = take(f, dir, &c1, &n1, &s1, err);
	if (r1 < 0)
		return r1;
	int r2 = take(f, newdir, &c2, &n2, &s2, err);
	if (r2 < 0) {
		if (!r1)
			put(f, s1);
		return r2;
	}
	int rc;
	if (!r1 && !r2 && s1 == s2) {
		struct sv_forward r = forward_for(f, s1, fn, arg);
		rc = sv_rename(c1, n1, name, n2, newname, flags, sv_forward_fn(), &r, err);
	} else if (r1 == 1 && r2 == 1) {
		char *from = real_place(f, n1, name, &rc, err);
		char *to = from ? real_place(f, n2, newname, &rc, err) : NULL;
		struct place p1 = {-1, NULL, NULL}, p2 = {-1, NULL, NULL};
		if (to && (rc = place_open(f, from, &p1)))
			from = NULL;
		if (to && !rc && (rc = place_open(f, to, &p2)))
			to = NULL;
		if (rc && !err->msg[0])
			sv_err_set(err, rc, "%s", strerror(-rc));
		if (!rc && to) {
			/* A container moved (or replaced: mv -T of one container
			 * onto another) is closed first (it holds its file by its
			 * path) and opened again under its new name; one in use
			 * stays where it is. */
			pthread_mutex_lock(&f->lock);
			for (int k = 0; k < 2 && !rc; k++) {
				int e1;
				uint32_t i = k ? child(f, n2, newname, &e1) : child(f, n1, name, &rc);
				struct entry *e = i == SV_NONE ? NULL : &f->e[i];
				if (!e || e->kind != E_BOX || !e->slot || !f->s[e->slot - 1].c)
					continue;
				struct slot *sl = &f->s[e->slot - 1];
				if (sl->users || !sv_container_idle(sl->c))
					rc = sv_err_set(err, -EBUSY, "%s is in use (a file of it "
							"open, or an edit pending)", e->rel);
				else
					close_slot(f, e->slot - 1);
			}
			if (!rc && renameat2(p1.at, p1.leaf, p2.at, p2.leaf, flags))
				rc = sv_err_set(err, -errno, "%s", strerror(errno));
			pthread_mutex_unlock(&f->lock);
		}
		if (p1.rel)
			place_close(&p1);
		else
			free(from);
		if (p2.rel)
			place_close(&p2);
		else
			free(to);
	} else {
		rc = sv_err_set(err, -EXDEV, "between a container and another place");
	}
	if (!r1)
		put(f, s1);
	if (!r2)
		put(f, s2);
	return rc;
}

int sv_folder_open_real(struct sv_folder *f, sv_id n, int flags)
{
	if (n >> 32)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	int rc;
	uint32_t i = real_file(f, n, &rc);
	bool wr = (flags & O_ACCMODE) != O_RDONLY;
	if (i != SV_NONE && wr && (f->e[i].kind != E_FILE || !changeable(f, i)))
		rc = f->opts.read_only ? -EROFS : -EACCES;
	char *rel = i == SV_NONE || rc ? NULL : strdup(f->e[i].rel);
	if (!rc && !rel)
		rc = -ENOMEM;
	pthread_mutex_unlock(&f->lock);
	if (rc)
		return rc;
	/* Never through a link, never blocking (a FIFO that took a regular
	 * file's place since its look is refused). */
	int fd = sv_open_beneath(f->dfd, rel, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NOFOLLOW |
				 O_NONBLOCK | O_NOCTTY, 0);
	free(rel);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (!(flags & O_NONBLOCK))
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if ((flags & O_TRUNC) && wr && ftruncate(fd, 0)) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (wr) {
		pthread_mutex_lock(&f->lock);
		f->e[i].writers++;
		pthread_mutex_unlock(&f->lock);
	}
	return fd;
}

void sv_folder_real_written(struct sv_folder *f, sv_id n)
{
	if (n >> 32)
		return;
	pthread_mutex_lock(&f->lock);
	if ((uint32_t)n < f->ne && f->e[n].writers)
		f->e[n].writers--;
	pthread_mutex_unlock(&f->lock);
}

/* Entry n as a place for a change of its attributes (0 and *p), or 1
 * if n is a container's node, 2 if it is a container's directory (a box:
 * its times are kept by the folder while its file is the same, as a
 * container's files keep theirs; its mode and owner are accepted, not
 * kept; the file itself is not touched), or -errno. */
static int attr_place(struct sv_folder *f, sv_id n, struct place *p)
{
	if (n >> 32)
		return 1;
	pthread_mutex_lock(&f->lock);
	uint32_t i = (uint32_t)n;
	int rc = i < f->ne ? classify(f, i) : -ENOENT;
	char *rel = NULL;
	if (!rc && f->e[i].kind == E_BOX)
		rc = 2;
	else if (!rc && f->opts.read_only)
		rc = -EROFS;
	else if (!rc && !changeable(f, i))
		rc = f->opts.read_only ? -EROFS : -EPERM;
	if (!rc && !(rel = strdup(f->e[i].rel)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&f->lock);
	if (!rc)
		rc = place_open(f, rel, p);
	return rc;
}

int sv_folder_set_times(struct sv_folder *f, sv_id n, const struct timespec *atime,
			const struct timespec *mtime)
{
	struct place p;
	int rc = attr_place(f, n, &p);
	if (rc == 1) {
		struct sv_container *c;
		uint32_t node, slot;
		struct sv_err err;
		rc = take(f, n, &c, &node, &slot, &err);
		if (rc)
			return rc < 0 ? rc : -EPERM;
		rc = sv_set_times(c, node, atime, mtime);
		put(f, slot);
		return rc;
	}
	if (rc == 2) {
		pthread_mutex_lock(&f->lock);
		struct entry *e = &f->e[(uint32_t)n];
		if (!e->times_set) {
			e->set_mtime = e->st.st_mtim;
			e->set_atime = e->st.st_atim;
		}
		if (mtime)
			e->set_mtime = *mtime;
		if (atime)
			e->set_atime = *atime;
		e->times_set = true;
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	if (rc)
		return rc;
	struct timespec ts[2] = {atime ? *atime : (struct timespec){0, UTIME_OMIT},
				 mtime ? *mtime : (struct timespec){0, UTIME_OMIT}};
	rc = utimensat(p.at, p.leaf, ts, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	place_close(&p);
	return rc;
}

int sv_folder_set_mode(struct sv_folder *f, sv_id n, uint32_t mode)
{
	struct place p;
	int rc = attr_place(f, n, &p);
	if (rc)
		return rc == 1 || rc == 2 ? 0 : rc;
	struct stat st;
	if (fstatat(p.at, p.leaf, &st, AT_SYMLINK_NOFOLLOW))
		rc = -errno;
	else if (S_ISLNK(st.st_mode))
		rc = -EOPNOTSUPP; /* a link has no mode of its own */
	else
		rc = fchmodat(p.at, p.leaf, mode & 07777, 0) ? -errno : 0;
	place_close(&p);
	return rc;
}

int sv_folder_set_owner(struct sv_folder *f, sv_id n, uint32_t uid, uint32_t gid)
{
	struct place p;
	int rc = attr_place(f, n, &p);
	if (rc)
		return rc == 1 || rc == 2 ? 0 : rc;
	rc = fchownat(p.at, p.leaf, uid, gid, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	place_close(&p);
	return rc;
}

/* The target of a symbolic link of the folder: 0 and *len bytes in buf
 * (not terminated), or -errno. */
int sv_folder_readlink(struct sv_folder *f, sv_id n, char *buf, size_t size, size_t *len)
{
	if (n >> 32)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	uint32_t i = (uint32_t)n;
	int rc = i < f->ne ? classify(f, i) : -ENOENT;
	char *rel = NULL;
	if (!rc && (f->remote || f->e[i].kind != E_FILE || !S_ISLNK(f->e[i].st.st_mode)))
		rc = -EINVAL;
	if (!rc && !(rel = strdup(f->e[i].rel)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&f->lock);
	struct place p;
	if (!rc)
		rc = place_open(f, rel, &p);
	if (rc)
		return rc;
	ssize_t k = readlinkat(p.at, p.leaf, buf, size);
	rc = k < 0 ? -errno : 0;
	place_close(&p);
	if (!rc)
		*len = (size_t)k;
	return rc;
}

/* A symbolic link named name in real directory dir, to target (kept as
 * it is: the folder never follows it), given to who. */
int sv_folder_symlink(struct sv_folder *f, sv_id dir, const char *name, const char *target,
		      const struct sv_owner *who, sv_id *out, struct sv_err *err)
{
	uint32_t node;
	int rc = real_dir_of(f, dir, &node, "a container takes no symbolic links", err);
	if (rc)
		return rc == 2 ? sv_err_set(err, -ENOENT, "removed") : rc;
	char *rel = real_place(f, node, name, &rc, err);
	struct place p;
	if (!rel || (rc = place_open(f, rel, &p)))
		return rel ? sv_err_set(err, rc, "%s", strerror(-rc)) : rc;
	rc = symlinkat(target, p.at, p.leaf) ? -errno : 0;
	if (!rc && (rc = give_to(&p, -1, 0777, who)))
		unlinkat(p.at, p.leaf, 0);
	place_close(&p);
	if (rc)
		return sv_err_set(err, rc, "%s", strerror(-rc));
	uint32_t i = real_child(f, node, name, &rc, err);
	if (i == SV_NONE)
		return rc;
	*out = i;
	return 0;
}

uint32_t sv_folder_drops(struct sv_folder *f, sv_id n)
{
	struct sv_container *c;
	uint32_t node, slot;
	if (!(n >> 32) || container_of_id(f, n, &c, &node, &slot))
		return 0;
	uint32_t d = sv_drops(c, node);
	put(f, slot);
	return d;
}

sv_id sv_folder_current(struct sv_folder *f, sv_id n)
{
	struct sv_container *c;
	uint32_t node, slot;
	if (!(n >> 32) || container_of_id(f, n, &c, &node, &slot))
		return n;
	uint32_t k = sv_current(c, node);
	put(f, slot);
	return SLOT_ID(slot, k);
}

bool sv_folder_read_only(struct sv_folder *f, sv_id n)
{
	struct sv_container *c;
	uint32_t node, slot;
	if (f->opts.read_only || !(n >> 32) || container_of_id(f, n, &c, &node, &slot))
		return f->opts.read_only || (f->remote && !(n >> 32));
	bool ro = sv_container_read_only(c);
	put(f, slot);
	return ro;
}

int sv_folder_path(struct sv_folder *f, sv_id n, char *buf, size_t size)
{
	if (!(n >> 32)) {
		pthread_mutex_lock(&f->lock);
		int rc = (uint32_t)n < f->ne ? 0 : -ENOENT;
		if (!rc)
			snprintf(buf, size, "%s", f->e[n].rel);
		pthread_mutex_unlock(&f->lock);
		return rc;
	}
	struct sv_container *c;
	uint32_t node, slot;
	int rc = container_of_id(f, n, &c, &node, &slot);
	if (rc)
		return rc;
	char inner[4096];
	rc = sv_path(c, node, inner, sizeof inner);
	pthread_mutex_lock(&f->lock);
	if (!rc)
		snprintf(buf, size, "%s/%s", f->e[f->s[slot].box].rel, inner);
	put_locked(f, slot);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int sv_folder_temps(struct sv_folder *f, void (*fn)(void *arg, const char *path), void *arg)
{
	int total = 0;
	pthread_mutex_lock(&f->lock);
	for (uint32_t s = 0; s < f->ns; s++)
		if (f->s[s].c)
			total += sv_temps(f->s[s].c, fn, arg);
	pthread_mutex_unlock(&f->lock);
	return total;
}
