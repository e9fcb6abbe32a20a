/*
 * folder_slots.c - a save folder's containers: the slots they are opened in, the sources
 * kept for their opens, closing the idle ones past max_open; and the
 * watcher that follows the real directories looked into (inotify).
 */
#include "folder.h"

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
	int64_t now = sv_folder_now_ns();
	/* Containers whose file was replaced go as soon as they are idle. */
	for (uint32_t k = 0; f->superseded && k < f->ns; k++)
		if (f->s[k].c && k != keep && f->e[f->s[k].claimed].slot != k + 1 && !f->s[k].users &&
		    sv_container_idle(f->s[k].c))
			sv_folder_close_slot(f, k);
	/* (Opens under way count: two at once do not both find room.) */
	while (f->opts.max_open && f->nopen + f->nopening + more > f->opts.max_open) {
		uint32_t lru = SV_NONE;
		for (int pass = 0; pass < 2 && lru == SV_NONE; pass++)
			for (uint32_t k = 0; k < f->ns; k++)
				if (f->s[k].c && k != keep && !f->s[k].users &&
				    !(f->s[k].removed && f->e[f->s[k].claimed].ghost_ns) &&
				    (pass || now - f->s[k].used_ns >= IDLE_NS) &&
				    (lru == SV_NONE || f->s[k].used < f->s[lru].used) &&
				    sv_container_idle(f->s[k].c))
					lru = k;
		if (lru == SV_NONE)
			break;
		sv_folder_close_slot(f, lru);
		/* What the client holds of it goes too (its ids are stale). */
		uint32_t claimed = f->s[lru].claimed;
		if (f->live_fn && f->e[claimed].slot == lru + 1)
			f->live_fn(f->live_arg, claimed, f->e[claimed].parent, f->e[claimed].name, true);
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
		f->s[f->ns].claimed = i;
		e->slot = ++f->ns;
	}
	*slot = e->slot - 1;
	return 0;
}

/* Container c, just opened for claimed entry i, takes its place in slot s
 * (lock held): 0, or -ENOMEM (c closed). */
static int install(struct sv_folder *f, uint32_t i, uint32_t s, struct sv_container *c)
{
	struct slot *sl = &f->s[s];
	sl->c = c;
	f->nopen++;
	if (f->nopen > f->nopen_most)
		f->nopen_most = f->nopen;
	sl->epoch++;
	sl->err = 0;
	if (f->e[i].slot != s + 1)
		f->superseded++; /* classified again while it was opening */
	if (!sl->live && !(sl->live = calloc(1, sizeof *sl->live))) {
		sv_folder_close_slot(f, s);
		return -ENOMEM;
	}
	*sl->live = (struct sv_forward){f->live_fn, f->live_arg, i, s, sl->epoch};
	if (f->live_fn)
		sv_container_set_notify(sl->c, sv_forward_fn(), sl->live);
	uint32_t meta;
	sl->meta = sv_resolve(sl->c, ".savefs", &meta) ? SV_NONE : meta;
	return 0;
}

/* A container sv_folder_classify() opened for claimed entry i, kept for its first use
 * (lock held); closed if another was opened meanwhile. */
void sv_folder_adopt(struct sv_folder *f, uint32_t i, struct sv_container *c)
{
	uint32_t s;
	struct sv_err err;
	if (slot_for(f, i, &s, &err) || f->s[s].c || f->s[s].opening) {
		sv_container_free(c);
		return;
	}
	f->s[s].used = ++f->clock;
	f->s[s].used_ns = sv_folder_now_ns();
	/* Room made first, so that max_open holds at every point; with
	 * none (every open one in use), it was opened to be confirmed only,
	 * and goes. */
	trim(f, s, 1);
	if (f->opts.max_open && f->nopen + f->nopening + 1 > f->opts.max_open)
		sv_container_free(c);
	else
		install(f, i, s, c);
}

/* The container of claimed entry i, opened if it is not: 0 and *out (its
 * slot in *slot), or -errno with the reason.  -EMEDIUMTYPE, or a failure
 * to open a container classified by its name only (remote): the entry passes
 * through from now on, and the client is told. */
int sv_folder_open_container(struct sv_folder *f, uint32_t i, struct sv_container **out,
			     uint32_t *slot, struct sv_err *err)
{
	uint32_t s;
	int rc = slot_for(f, i, &s, err);
	if (rc)
		return rc;
	struct slot *sl = &f->s[s];
	sl->used = ++f->clock;
	sl->used_ns = sv_folder_now_ns();
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
	char *p = sv_folder_full_path(f, i);
	if (!p)
		return sv_err_set(err, -ENOMEM, "out of memory");
	struct sv_opts o = f->opts;
	o.format = f->e[i].fmt ? f->e[i].fmt->name : NULL;
	/* Opened outside the lock: reading a big container's index does
	 * not hold up the other containers' calls.  The tables may move. */
	struct sv_container *c = NULL;
	f->s[s].opening = true;
	f->nopening++;
	/* The source sv_folder_classify() opened, if it is still the entry's file. */
	struct entry *e = &f->e[i];
	struct sv_source *held = sv_folder_take_held(f, i);
	const struct sv_format *fmt = e->fmt;
	if (held && !sv_folder_same_file(&held->st, &e->st)) {
		sv_source_free(held);
		held = NULL;
	}
	bool local = !f->remote;
	pthread_mutex_unlock(&f->lock);
	if (!o.format)
		rc = sv_err_set(err, -EMEDIUMTYPE, "no format claims it");
	else if (local && !sv_folder_path_is_real(p))
		rc = sv_err_set(err, -EMEDIUMTYPE, "a symbolic link now");
	else if (held)
		rc = sv_container_open_src(held, fmt, &o, &c, err);
	else
		rc = sv_container_open(p, &o, &c, err);
	free(p);
	pthread_mutex_lock(&f->lock);
	sl = &f->s[s];
	sl->opening = false;
	f->nopening--;
	pthread_cond_broadcast(&f->opened);
	e = &f->e[i];
	if (rc && (rc == -EMEDIUMTYPE || (f->remote && bytes_fault(rc))) && e->slot == s + 1) {
		/* Not one of its format's containers after all, or one that
		 * cannot be opened: it passes through as the file it is (and
		 * the client, which took it for a directory, is told). */
		if (rc != -EMEDIUMTYPE) {
			free(e->broken);
			e->broken = strdup(err->msg);
			sv_folder_log(f, "%s: a %s container that cannot be opened (%s): shown as the "
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
			sv_folder_log(f, "%s: cannot be opened: %s", e->rel, err->msg);
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
 * root: its claimed).  With `fresh` (a lookup, a stat, a listing, an open: a
 * call that names the node anew), its claimed entry is looked at first, and a
 * container whose file was replaced since is -ESTALE: the kernel, which
 * may hold its names a while, looks the path up again and finds the new
 * one.  Without (a read or write of a file already open), the container
 * it was opened in serves it whole.
 */
int sv_folder_node_container_as(struct sv_folder *f, sv_id id, struct sv_container **c,
				uint32_t *node, uint32_t *slot, bool fresh)
{
	uint64_t s = sv_slot_of(id);
	if (s >= f->ns || !f->s[s].c || sv_epoch_of(id) != (f->s[s].epoch & SV_EPOCH_MASK))
		return -ESTALE;
	if (fresh) {
		uint32_t claimed = f->s[s].claimed;
		if (sv_folder_classify(f, claimed) || f->e[claimed].slot != s + 1 || !f->s[s].c)
			return -ESTALE;
	}
	f->s[s].used = ++f->clock;
	f->s[s].used_ns = sv_folder_now_ns();
	f->s[s].users++;
	*c = f->s[s].c;
	*node = (uint32_t)id;
	*slot = (uint32_t)s;
	return 0;
}

int sv_folder_node_container(struct sv_folder *f, sv_id id, struct sv_container **c,
			     uint32_t *node, uint32_t *slot)
{
	return sv_folder_node_container_as(f, id, c, node, slot, false);
}

int sv_folder_node_fresh(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
			 uint32_t *slot)
{
	return sv_folder_node_container_as(f, id, c, node, slot, true);
}

/* node_container for a call outside the lock: takes and lets go of it. */
int sv_folder_container_of_id(struct sv_folder *f, sv_id id, struct sv_container **c, uint32_t *node,
			      uint32_t *slot)
{
	pthread_mutex_lock(&f->lock);
	int rc = sv_folder_node_container(f, id, c, node, slot);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* A call that open_box or node_container gave a container to is
 * done with it (lock held / not held). */
void sv_folder_slot_release_locked(struct sv_folder *f, uint32_t slot)
{
	if (f->s[slot].users)
		f->s[slot].users--;
}

/* The id of node `node` of the container in slot (lock not held). */
sv_id sv_folder_slot_id(struct sv_folder *f, uint32_t slot, uint32_t node)
{
	pthread_mutex_lock(&f->lock);
	uint32_t epoch = f->s[slot].epoch;
	pthread_mutex_unlock(&f->lock);
	return sv_slot_id(slot, epoch, node);
}

void sv_folder_slot_release(struct sv_folder *f, uint32_t slot)
{
	pthread_mutex_lock(&f->lock);
	sv_folder_slot_release_locked(f, slot);
	pthread_mutex_unlock(&f->lock);
}

/* ---- following the folder ---------------------------------------------------- */

/*
 * Each real directory the mount has listed or looked into is watched
 * (inotify): a name created, removed, renamed, written or changed in it is
 * reported to the client (live_fn) as gone, so that the kernel drops what
 * it holds of it and asks again; asked again, the entry is classified anew.
 */
#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | \
		    IN_MODIFY | IN_ATTRIB | IN_ONLYDIR)

/* Watches real directory entry d (lock held). */
void sv_folder_watch_dir(struct sv_folder *f, uint32_t d)
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
		sv_folder_log(f, "%s: not followed (%s): changes made outside the mount show "
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
				char *rel = sv_folder_rel_of(f, d, name);
				if (rel) {
					uint32_t i = sv_folder_find_entry(f, rel);
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
void sv_folder_watch_start(struct sv_folder *f)
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

void sv_folder_watch_stop(struct sv_folder *f)
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
