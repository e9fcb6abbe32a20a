/*
 * tab.c - arrays that leave the heap when they grow big: a format's index
 * (a log's line table, a recording's chunk table, a zip's directory; the
 * core's node table, an index record read back) grows
 * with its container's entries, and past SV_TAB_SPILL bytes it moves into
 * an unlinked file mapped shared.  Its pages are then the kernel's page
 * cache, backed by the disk, not the daemon's heap: sv_tab_shed() drops
 * them from the daemon's mapping (they stay in the file and come back on
 * the next touch, a minor fault while the kernel still caches them), so
 * what the daemon holds is the window it touched since, at any entry
 * count.
 *
 * When: at known points, never by a clock.  Whatever may have touched an
 * array's pages is counted as it goes (an element appended, a run of a
 * sort, a client's lookups and listings, a format's pass over its index
 * through sv_tab_touch), and every so much (a spill threshold of bytes,
 * SV_TAB_LOOK_EVERY entries of a client's) the process's mapped file pages
 * (/proc/self/statm) are looked at: past the window above what was held
 * after the last shed, the arrays' pages are shed.  The window is
 * SV_TAB_WINDOW spill thresholds (16 MB by default; -o spill sets both)
 * or, in the daemon, an eighth of its cache's cap if that is less (8 MB at
 * the default 64 MB cap), at least 4 thresholds.  So what the daemon
 * holds of them is bounded by the window and one step, at any entry count
 * and however busy the machine is: no thread races the work it bounds.
 * A sort goes through sv_tab_sort, which touches its pages in order.
 *
 * An array is grown like sv_grow (it may move) and freed with sv_tab_free.
 * The file's blocks are allocated (fallocate) before the mapping reaches
 * them, so that a full disk fails the growth with -ENOSPC instead of a
 * SIGBUS at a later write; where the file cannot be made or allocated, the
 * array stays on the heap.  The file lives in the persistent index's
 * directory (or /var/tmp), unlinked from the start (O_TMPFILE), so a
 * crashed daemon leaves nothing behind.
 */
#include "savefs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct spill {
	void *p;
	size_t len;     /* bytes mapped and allocated in the file */
	int fd;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct spill *spills;      /* every array in a file, by address */
static size_t nspills, capspills;
static size_t spill_at = SV_TAB_SPILL;
static size_t window = (size_t)SV_TAB_SPILL * SV_TAB_WINDOW; /* bytes */
static char *spill_dir;           /* NULL: the index directory, else
				   * /var/tmp; "": none (the heap) */
static uint64_t noted;            /* a client's entries since the last look
				   * (atomic) */
static uint64_t moved;            /* bytes touched since the last look (atomic) */
static uint64_t base;             /* mapped file pages held right after the
				   * last shed (the libraries'), bytes */
static struct sv_tab_stats st;

static uint64_t file_resident(void);
static void look(void);

void sv_tab_configure(const char *dir, size_t threshold, uint64_t cache_cap)
{
	size_t win = cache_cap ? sv_tab_window_for(cache_cap, threshold)
			       : threshold * SV_TAB_WINDOW;
	pthread_mutex_lock(&lock);
	free(spill_dir);
	spill_dir = dir ? strdup(dir) : NULL;
	__atomic_store_n(&spill_at, threshold, __ATOMIC_RELAXED); /* read unlocked */
	window = win;
	pthread_mutex_unlock(&lock);
}

size_t sv_tab_window_for(uint64_t cap, size_t threshold)
{
	uint64_t w = cap / 8, lo = (uint64_t)threshold * 4,
		 hi = (uint64_t)threshold * SV_TAB_WINDOW;
	return (size_t)(w < lo ? lo : w > hi ? hi : w);
}

static struct spill *find(const void *p)
{
	for (size_t i = 0; i < nspills; i++)
		if (spills[i].p == p)
			return &spills[i];
	return NULL;
}

/* A new unlinked file in dir: its descriptor, or -1. */
static int tmpfile_in(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	char path[4096];
	if (snprintf(path, sizeof path, "%s/.savefs-tab-XXXXXX", dir) >= (int)sizeof path)
		return -1;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/* The spill file: in the configured directory, else the persistent
 * index's (if it is there), else /var/tmp; -1 if none takes one. */
static int new_file(void)
{
	if (spill_dir)
		return *spill_dir ? tmpfile_in(spill_dir) : -1;
	char dir[4096];
	if (!sv_index_dir(dir, sizeof dir)) {
		int fd = tmpfile_in(dir);
		if (fd >= 0)
			return fd;
	}
	return tmpfile_in("/var/tmp");
}

/* Rounds n up to whole pages. */
static size_t pages(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

/* Moves or grows the array at *v (old bytes in use) to a mapping of at
 * least `bytes`: 0, or -errno with *v as it was. */
static int spill_grow(void **v, size_t old, size_t bytes)
{
	size_t len = pages(bytes);
	struct spill *s = *v ? find(*v) : NULL;
	if (s) {
		int rc = fallocate(s->fd, 0, 0, (off_t)len);
		if (rc)
			return -errno;
		void *p = mremap(s->p, s->len, len, MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			return -errno;
		s->p = p;
		st.bytes += len - s->len;
		s->len = len;
		*v = p;
		return 0;
	}
	if (nspills == capspills) {
		int rc = sv_grow((void **)&spills, &capspills, nspills + 1, sizeof *spills);
		if (rc)
			return rc;
	}
	int fd = new_file();
	if (fd < 0)
		return -ENOSPC;
	if (!nspills)
		base = file_resident(); /* before any array's page */
	if (fallocate(fd, 0, 0, (off_t)len)) {
		int e = errno;
		close(fd);
		return -e;
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (old)
		memcpy(p, *v, old);
	free(*v);
	spills[nspills] = (struct spill){p, len, fd};
	__atomic_store_n(&nspills, nspills + 1, __ATOMIC_RELAXED); /* read unlocked */
	st.arrays++;
	st.bytes += len;
	*v = p;
	return 0;
}

/* sv_tab_grow, and whether the array is in a file now (*in_file). */
static int grow(void **v, size_t *cap, size_t need, size_t size, bool *in_file)
{
	size_t nc;
	if (need <= *cap) {
		/* An element appended (or a few): counted. */
		sv_tab_touch(size);
		return 0;
	}
	if (sv_grow_cap(*cap, need, size, &nc))
		return -ENOMEM;
	pthread_mutex_lock(&lock);
	bool mapped = *v && find(*v);
	int rc = mapped || nc * size > spill_at ? spill_grow(v, *cap * size, nc * size) : -1;
	pthread_mutex_unlock(&lock);
	if (rc && mapped)
		return rc; /* a mapping that could not grow */
	if (rc) {
		/* On the heap: below the threshold, or no file to spill to. */
		void *p = realloc(*v, nc * size);
		if (!p)
			return -ENOMEM;
		*v = p;
	}
	*cap = nc;
	*in_file = !rc;
	return 0;
}

int sv_tab_grow(void **v, size_t *cap, size_t need, size_t size)
{
	bool in_file;
	return grow(v, cap, need, size, &in_file);
}

int sv_tab_alloc(void **v, size_t *cap, size_t n, size_t size)
{
	bool in_file = false;
	*v = NULL;
	*cap = 0;
	int rc = grow(v, cap, n ? n : 1, size, &in_file);
	if (!rc && !in_file) /* a new file's pages are zero already */
		memset(*v, 0, *cap * size);
	return rc;
}

void sv_tab_free(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&lock);
	struct spill *s = find(p);
	if (s) {
		munmap(s->p, s->len);
		close(s->fd);
		st.arrays--;
		st.bytes -= s->len;
		*s = spills[nspills - 1];
		__atomic_store_n(&nspills, nspills - 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&lock);
	if (!s)
		free(p);
}

typedef int (*cmp_fn)(const void *, const void *);

/* Swaps two elements of size bytes. */
static void swap(char *a, char *b, size_t size)
{
	if (size % sizeof(uint64_t) == 0 && (uintptr_t)a % sizeof(uint64_t) == 0 &&
	    (uintptr_t)b % sizeof(uint64_t) == 0) {
		uint64_t *x = (uint64_t *)(void *)a, *y = (uint64_t *)(void *)b;
		for (size_t i = 0; i < size / sizeof *x; i++) {
			uint64_t t = x[i];
			x[i] = y[i];
			y[i] = t;
		}
		return;
	}
	char t[64];
	while (size) {
		size_t k = size < sizeof t ? size : sizeof t;
		memcpy(t, a, k);
		memcpy(a, b, k);
		memcpy(b, t, k);
		a += k;
		b += k;
		size -= k;
	}
}

/* The heap below i (of n) made whole again (heapsort's sift). */
static void sift(char *v, size_t i, size_t n, size_t size, cmp_fn cmp)
{
	for (;;) {
		size_t big = i, l = 2 * i + 1, r = l + 1;
		if (l < n && cmp(v + l * size, v + big * size) > 0)
			big = l;
		if (r < n && cmp(v + r * size, v + big * size) > 0)
			big = r;
		if (big == i)
			return;
		swap(v + i * size, v + big * size, size);
		i = big;
	}
}

static void heap_sort(char *v, size_t n, size_t size, cmp_fn cmp)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n, size, cmp);
	for (size_t end = n; end-- > 1;) {
		swap(v, v + end * size, size);
		sift(v, 0, end, size, cmp);
	}
}

/* Quicksort in place (median of three; the smaller side first, so the
 * stack stays within log n), heapsort past the depth limit, insertion
 * below 17 elements.  Elements are swapped where they are: glibc's qsort
 * sorts pointers to elements wider than 32 bytes and moves them after,
 * three times slower on a chunk table. */
static void intro_sort(char *v, size_t n, size_t size, cmp_fn cmp, unsigned depth)
{
	while (n > 16) {
		if (!depth--) {
			heap_sort(v, n, size, cmp);
			return;
		}
		char *lo = v, *mid = v + n / 2 * size, *hi = v + (n - 1) * size;
		if (cmp(mid, lo) < 0)
			swap(mid, lo, size);
		if (cmp(hi, mid) < 0) {
			swap(hi, mid, size);
			if (cmp(mid, lo) < 0)
				swap(mid, lo, size);
		}
		swap(lo, mid, size); /* the pivot at 0; hi, not below it, ends i's walk */
		size_t i = 0, j = n;
		for (;;) {
			do
				i++;
			while (i < n && cmp(v + i * size, v) < 0);
			do
				j--;
			while (cmp(v + j * size, v) > 0);
			if (i >= j)
				break;
			swap(v + i * size, v + j * size, size);
		}
		swap(v, v + j * size, size);
		/* [0, j) not above the pivot, (j, n) not below it */
		size_t left = j, right = n - j - 1;
		if (left < right) {
			intro_sort(v, left, size, cmp, depth);
			v += (j + 1) * size;
			n = right;
		} else {
			intro_sort(v + (j + 1) * size, right, size, cmp, depth);
			n = left;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && cmp(v + (k - 1) * size, v + k * size) > 0; k--)
			swap(v + (k - 1) * size, v + k * size, size);
}

static void sort_here(void *v, size_t n, size_t size, cmp_fn cmp)
{
	unsigned depth = 0;
	for (size_t k = n; k; k >>= 1)
		depth += 2;
	intro_sort(v, n, size, cmp, depth);
}

/* A run being merged: its next element and its end, in elements. */
struct run {
	size_t at, end;
};

/* The heap of runs below i (of k) made whole again: the run whose next
 * element is least on top. */
static void sift_runs(struct run *h, size_t i, size_t k, const char *t, size_t size,
		      cmp_fn cmp)
{
	for (;;) {
		size_t least = i, l = 2 * i + 1, r = l + 1;
		if (l < k && cmp(t + h[l].at * size, t + h[least].at * size) < 0)
			least = l;
		if (r < k && cmp(t + h[r].at * size, t + h[least].at * size) < 0)
			least = r;
		if (least == i)
			return;
		struct run x = h[i];
		h[i] = h[least];
		h[least] = x;
		i = least;
	}
}

/*
 * An array in a file is sorted in runs a quarter of the window long, each
 * copied to the heap, sorted there and written to a second array in a
 * file; the runs are then merged back into the first.  Each page is read
 * twice and written twice, in order, so what is shed behind the sort is not
 * wanted again.  (A sort in place touches
 * a page at every level of its recursion: past the window each touch
 * after a shed is a fault again, 0.3 s for each pass over 72 MB here, and
 * glibc's qsort touches the whole array at random.)
 */
void sv_tab_sort(void *v, size_t n, size_t size, cmp_fn cmp)
{
	if (n < 2)
		return;
	pthread_mutex_lock(&lock);
	bool mapped = find(v) != NULL;
	size_t run = window / 4 / size;
	pthread_mutex_unlock(&lock);
	char *buf = NULL, *t = NULL;
	struct run *h = NULL;
	size_t cap = 0, k = run ? (n + run - 1) / run : 0;
	if (!mapped || n <= run || !(buf = malloc(run * size)) ||
	    !(h = malloc(k * sizeof *h)) || sv_tab_grow((void **)&t, &cap, n, size)) {
		/* On the heap, within the window, or nothing to sort through. */
		free(buf);
		free(h);
		sv_tab_free(t);
		if (mapped)
			sort_here(v, n, size, cmp);
		else
			qsort(v, n, size, cmp);
		return;
	}
	for (size_t i = 0; i < k; i++) {
		size_t at = i * run, m = n - at < run ? n - at : run;
		memcpy(buf, (char *)v + at * size, m * size);
		sort_here(buf, m, size, cmp);
		memcpy(t + at * size, buf, m * size);
		h[i] = (struct run){at, at + m};
		sv_tab_touch(2 * m * size);
	}
	free(buf);
	for (size_t i = k / 2; i-- > 0;)
		sift_runs(h, i, k, t, size, cmp);
	size_t merged = 0;
	for (char *out = v; k;) {
		memcpy(out, t + h[0].at * size, size);
		out += size;
		if (++merged % 4096 == 0)
			sv_tab_touch(2 * 4096 * size); /* (counted a page run at a time) */
		if (++h[0].at == h[0].end)
			h[0] = h[--k];
		sift_runs(h, 0, k, t, size, cmp);
	}
	free(h);
	sv_tab_free(t);
}

/* (lock held) */
static void shed(void)
{
	for (size_t i = 0; i < nspills; i++)
		madvise(spills[i].p, spills[i].len, MADV_DONTNEED);
	st.sheds++;
	base = file_resident();
}

/* (lock held) Whether the arrays hold more than the window: the mapped
 * file pages past what was held after the last shed. */
static bool over(void)
{
	return file_resident() > base + (uint64_t)window;
}

void sv_tab_shed(void)
{
	pthread_mutex_lock(&lock);
	shed();
	pthread_mutex_unlock(&lock);
}

/* (lock held) The daemon's file-backed resident pages (statm's third field: the
 * spilled arrays' pages it holds, and its libraries'), in bytes; 0 if
 * unknown. */
static uint64_t file_resident(void)
{
	/* Opened once a process: /proc/self is the process that opened it,
	 * and the daemon is a child of the one that opened the container. */
	static int fd = -1;
	static pid_t pid;
	if (pid != getpid()) {
		if (fd >= 0)
			close(fd);
		pid = getpid();
		fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	}
	char buf[128];
	ssize_t k = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
	if (k <= 0)
		return 0;
	buf[k] = '\0';
	unsigned long long size, res, shared;
	if (sscanf(buf, "%llu %llu %llu", &size, &res, &shared) != 3)
		return 0;
	return shared * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Looks at what the process holds of the arrays, and sheds them past the
 * window. */
static void look(void)
{
	pthread_mutex_lock(&lock);
	__atomic_store_n(&noted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&moved, 0, __ATOMIC_RELAXED);
	if (nspills && over())
		shed();
	pthread_mutex_unlock(&lock);
}

void sv_tab_note(uint64_t n)
{
	/* Entries touched at random (a listing in name order of a table in
	 * another order) hold a page each: what is held is looked at, not
	 * guessed from the count. */
	if (__atomic_load_n(&nspills, __ATOMIC_RELAXED) &&
	    __atomic_add_fetch(&noted, n, __ATOMIC_RELAXED) >= SV_TAB_LOOK_EVERY)
		look();
}

void sv_tab_touch(uint64_t bytes)
{
	if (__atomic_load_n(&nspills, __ATOMIC_RELAXED) &&
	    __atomic_add_fetch(&moved, bytes, __ATOMIC_RELAXED) >=
		    __atomic_load_n(&spill_at, __ATOMIC_RELAXED))
		look();
}

void sv_tab_stats(struct sv_tab_stats *out)
{
	pthread_mutex_lock(&lock);
	*out = st;
	pthread_mutex_unlock(&lock);
}
