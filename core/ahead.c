/*
 * ahead.c - the workers that build views before they are asked for: one
 * pool for the process, as many threads as cores, serving every owner of
 * work (a container's read-ahead, a folder's walk over its containers) in
 * turn, one job at a time.
 *
 * An owner keeps its own queue under its own lock; the pool knows only
 * that it has work (posted) and runs its run() call, which does one job
 * and says whether more is left.  Owners with work wait in a ring, first
 * posted first served, so that one busy container does not starve the
 * rest.  The workers run at a lower priority (nice 10): the threads that
 * answer the client, and whatever else the machine runs, come first.
 *
 * pool.lock guards the ring and each owner's listed/stopping/busy (a
 * leaf: taken under an owner's own lock when it posts, never around a
 * run()).
 */
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Threads at most, whatever the machine has. */
#define AHEAD_MAX 16

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work;      /* an owner was posted */
	pthread_cond_t idle;      /* an owner's run() returned */
	struct sv_ahead *head, *tail;
	unsigned started, want;   /* threads running, threads to have */
	uint64_t runs;            /* jobs run (for the tests) */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
	  NULL, NULL, 0, 0, 0};

long sv_gettid(void)
{
	return syscall(SYS_gettid);
}

static unsigned workers_wanted(void)
{
	const char *t = getenv("SAVEFS_TEST_AHEAD_WORKERS");
	long n = t && *t ? strtol(t, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > AHEAD_MAX ? AHEAD_MAX : (unsigned)n;
}

/* o at the ring's end, a worker woken for it (pool.lock held). */
static void list_tail(struct sv_ahead *o)
{
	o->listed = true;
	o->next = NULL;
	if (pool.tail)
		pool.tail->next = o;
	else
		pool.head = o;
	pool.tail = o;
	pthread_cond_signal(&pool.work);
}

static void *worker(void *arg)
{
	(void)arg;
	/* A thread's own nice (Linux: a thread is a task of its own). */
	(void)setpriority(PRIO_PROCESS, (id_t)sv_gettid(), 10);
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		while (!pool.head)
			pthread_cond_wait(&pool.work, &pool.lock);
		struct sv_ahead *o = pool.head;
		pool.head = o->next;
		if (!pool.head)
			pool.tail = NULL;
		o->next = NULL;
		o->listed = false;
		o->busy++;
		pool.runs++;
		pthread_mutex_unlock(&pool.lock);
		bool more = o->run(o);
		pthread_mutex_lock(&pool.lock);
		o->busy--;
		if (more && !o->listed && !o->stopping)
			list_tail(o);
		if (!o->busy)
			pthread_cond_broadcast(&pool.idle);
	}
	return NULL;
}

bool sv_ahead_post(struct sv_ahead *o)
{
	pthread_mutex_lock(&pool.lock);
	if (!pool.want)
		pool.want = workers_wanted();
	/* Started as work first comes, never stopped: they sleep when there
	 * is none. */
	while (pool.started < pool.want) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		int rc = pthread_create(&t, &a, worker, NULL);
		pthread_attr_destroy(&a);
		if (rc) {
			pool.want = pool.started; /* as many as could be made */
			break;
		}
		pool.started++;
	}
	bool ok = pool.started > 0 && !o->stopping;
	if (ok && !o->listed)
		list_tail(o);
	pthread_mutex_unlock(&pool.lock);
	return ok;
}

void sv_ahead_stop(struct sv_ahead *o)
{
	pthread_mutex_lock(&pool.lock);
	o->stopping = true;
	if (o->listed) {
		struct sv_ahead **pp = &pool.head, *prev = NULL;
		while (*pp != o) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		*pp = o->next;
		if (pool.tail == o)
			pool.tail = prev;
		o->listed = false;
		o->next = NULL;
	}
	while (o->busy)
		pthread_cond_wait(&pool.idle, &pool.lock);
	pthread_mutex_unlock(&pool.lock);
}

bool sv_ahead_stopping(struct sv_ahead *o)
{
	pthread_mutex_lock(&pool.lock);
	bool stopping = o->stopping;
	pthread_mutex_unlock(&pool.lock);
	return stopping;
}

unsigned sv_ahead_workers(void)
{
	pthread_mutex_lock(&pool.lock);
	unsigned n = pool.started;
	pthread_mutex_unlock(&pool.lock);
	return n;
}
