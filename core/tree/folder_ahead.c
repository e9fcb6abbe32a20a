/*
 * folder_ahead.c - a walk over a folder's containers, met ahead: when a
 * reader goes from one container to the next of the same directory (in
 * the listing's order: `grep -r`, `cp -r`, `tar`, a file manager's
 * thumbnails), the pool's workers (ahead.c) open the next few containers
 * and build in each the file the reader read first in the last one (a
 * thumbnail pass reads NAME/preview.png of each container in turn).
 *
 * A reader never waits for it: the note it leaves is a few fields under
 * the walk's own lock; the workers find the order (the directory's
 * listing), open containers only while max_open has room without closing
 * one, and stop at the next note that is not the walk's, or the unmount.
 *
 * ahead.lock guards the fields of struct folder_ahead (a leaf: never held
 * with the folder's lock or over a job).
 */
#include "folder.h"

/* Containers opened ahead of the reader at most. */
#define AHEAD_CONTAINERS 4
/* How far back in the listing the last container may be for a walk
 * (one: every container in turn; more: some skipped, as a pattern does). */
#define AHEAD_STEP 4

enum { JOB_WALK, JOB_OPEN };

static bool ahead_run(struct sv_ahead *o);

void sv_folder_ahead_init(struct sv_folder *f)
{
	struct folder_ahead *a = &f->ahead;
	memset(a, 0, sizeof *a);
	pthread_mutex_init(&a->lock, NULL);
	a->a.run = ahead_run;
	a->cur = a->last = a->cur_slot = SV_NONE;
}

void sv_folder_ahead_stop(struct sv_folder *f)
{
	struct folder_ahead *a = &f->ahead;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	a->njobs = 0;
	pthread_mutex_unlock(&a->lock);
	sv_ahead_stop(&a->a);
}

/* Queues a job of the walk `walk` (ahead.lock held); false if full. */
static bool queue(struct folder_ahead *a, int kind, uint32_t entry)
{
	if (a->njobs == AHEAD_JOBS)
		return false;
	a->jobs[a->njobs++] = (struct ahead_job){kind, entry, a->walk};
	return true;
}

void sv_folder_ahead_note(struct sv_folder *f, uint32_t slot, struct sv_container *c, uint32_t node)
{
	if (!f->opts.readahead)
		return;
	struct folder_ahead *a = &f->ahead;
	pthread_mutex_lock(&a->lock);
	bool same = a->cur_slot == slot;
	pthread_mutex_unlock(&a->lock);
	if (same)
		return; /* the reader goes on in the same container */
	pthread_mutex_lock(&f->lock);
	uint32_t i = slot < f->ns ? f->s[slot].claimed : SV_NONE;
	uint32_t d = i != SV_NONE && f->e[i].slot == slot + 1 ? f->e[i].parent : SV_NONE;
	pthread_mutex_unlock(&f->lock);
	if (d == SV_NONE)
		return;
	char path[sizeof a->path];
	if (sv_path(c, node, path, sizeof path))
		return;
	pthread_mutex_lock(&a->lock);
	if (!a->stop && a->cur != i) {
		/* A new container: perhaps the next of a walk, which a worker
		 * finds out from the listing; what was queued for another walk
		 * goes. */
		a->last = a->cur;
		a->cur = i;
		a->cur_slot = slot;
		a->dir = d;
		a->walk++;
		a->njobs = 0;
		snprintf(a->path, sizeof a->path, "%s", path);
		if (a->last != SV_NONE && queue(a, JOB_WALK, i))
			sv_ahead_post(&a->a);
	}
	pthread_mutex_unlock(&a->lock);
}

/* A walk's first job: whether the reader's last container was one to
 * AHEAD_STEP places before the present one in their directory's listing,
 * and if so the next containers at that step, queued to be opened. */
static void walk(struct sv_folder *f, uint32_t d, uint32_t last, uint32_t cur, uint64_t w)
{
	struct folder_ahead *a = &f->ahead;
	struct name_list l = {0};
	uint32_t found[AHEAD_CONTAINERS];
	unsigned nfound = 0;
	pthread_mutex_lock(&f->lock);
	if (d < f->ne && sv_folder_real_dir(f, d) && !sv_folder_real_names(f, d, &l)) {
		size_t at_last = SIZE_MAX, at_cur = SIZE_MAX;
		for (size_t k = 0; k < l.n; k++) {
			if (!strcmp(l.v[k], f->e[last].name) && f->e[last].parent == d)
				at_last = k;
			if (!strcmp(l.v[k], f->e[cur].name) && f->e[cur].parent == d)
				at_cur = k;
		}
		size_t step = at_cur > at_last ? at_cur - at_last : 0;
		if (at_cur != SIZE_MAX && at_last != SIZE_MAX && step && step <= AHEAD_STEP) {
			for (size_t k = at_cur + step; k < l.n && nfound < AHEAD_CONTAINERS; k += step) {
				int rc;
				uint32_t e = sv_folder_child(f, d, l.v[k], &rc);
				if (e != SV_NONE && !sv_folder_classify(f, e) && f->e[e].kind == E_CLAIMED)
					found[nfound++] = e;
			}
		}
	}
	pthread_mutex_unlock(&f->lock);
	sv_folder_names_free(&l);
	pthread_mutex_lock(&a->lock);
	bool posted = false;
	for (unsigned k = 0; k < nfound && a->walk == w && !a->stop; k++)
		posted |= queue(a, JOB_OPEN, found[k]);
	if (posted)
		sv_ahead_post(&a->a);
	pthread_mutex_unlock(&a->lock);
}

/* Entry i's container opened (if max_open has room for it without
 * closing another) and the walk's file built in it. */
static void open_ahead(struct sv_folder *f, uint32_t i, const char *path)
{
	struct folder_ahead *a = &f->ahead;
	struct sv_container *c = NULL;
	uint32_t slot;
	struct sv_err err;
	pthread_mutex_lock(&f->lock);
	bool was_open = f->e[i].slot && f->s[f->e[i].slot - 1].c;
	/* A remote folder's walk may close the least recently used idle
	 * container for it (one behind the walk) where max_open leaves room
	 * for the reader's own beside those opened ahead: an open there is
	 * round trips, which the walk spares the reader. */
	bool room = !f->opts.max_open || was_open || f->nopen + f->nopening < f->opts.max_open ||
		    (f->remote && f->opts.max_open > 2 * AHEAD_CONTAINERS);
	int rc = room && f->e[i].kind == E_CLAIMED ? sv_folder_open_container(f, i, &c, &slot, &err)
						    : -EAGAIN;
	pthread_mutex_unlock(&f->lock);
	if (rc)
		return;
	uint32_t n;
	bool built = !sv_resolve(c, path, &n) && sv_pf_build(c, n);
	sv_folder_slot_release(f, slot);
	pthread_mutex_lock(&a->lock);
	a->opened += !was_open;
	a->built += built;
	pthread_mutex_unlock(&a->lock);
}

static bool ahead_run(struct sv_ahead *o)
{
	struct folder_ahead *a = (struct folder_ahead *)o;
	struct sv_folder *f = (struct sv_folder *)((char *)a - offsetof(struct sv_folder, ahead));
	pthread_mutex_lock(&a->lock);
	if (a->stop || !a->njobs) {
		pthread_mutex_unlock(&a->lock);
		return false;
	}
	struct ahead_job j = a->jobs[0];
	memmove(a->jobs, a->jobs + 1, --a->njobs * sizeof *a->jobs);
	uint32_t d = a->dir, last = a->last, cur = a->cur;
	char path[sizeof a->path];
	memcpy(path, a->path, sizeof path);
	bool current = j.walk == a->walk;
	/* The next job to the next free worker, meanwhile. */
	if (a->njobs)
		sv_ahead_post(&a->a);
	pthread_mutex_unlock(&a->lock);
	if (current && j.kind == JOB_WALK)
		walk(f, d, last, cur, j.walk);
	else if (current)
		open_ahead(f, j.entry, path);
	pthread_mutex_lock(&a->lock);
	bool more = a->njobs && !a->stop;
	pthread_mutex_unlock(&a->lock);
	return more;
}

void sv_folder_ahead_counts(struct sv_folder *f, uint64_t *opened, uint64_t *built)
{
	struct folder_ahead *a = &f->ahead;
	pthread_mutex_lock(&a->lock);
	*opened = a->opened;
	*built = a->built;
	pthread_mutex_unlock(&a->lock);
}
