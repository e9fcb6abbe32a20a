/*
 * helpers.h - the small shared pieces every part of savefs uses: errors
 * with a reason, growable buffers, reference-counted blobs, the
 * decoded-data cache, zlib wrappers, file copies and the one decimal
 * writer.  None knows about containers, nodes or formats.  (The bounded
 * reader of untrusted bytes is rd.h; the byte codecs are codec/codec.h.)
 *
 * Errors: fallible functions return 0 or -errno and fill a struct sv_err
 * with a one-line reason meant for a person.
 */
#ifndef SV_HELPERS_H
#define SV_HELPERS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#if defined(__SSE2__)
#include <emmintrin.h>
/* True if the first len bytes of key are one of list's names (a
 * NULL-terminated list, or NULL: none). */
bool sv_key_listed(const char *const *list, const char *key, size_t len);

#endif

/* A range of bytes (of a container, a file). */
struct sv_range {
	uint64_t off, len;
};

/* ---- errors ------------------------------------------------------------ */

#define SV_ERR_MAX 320

/* A code (negative errno) and a reason for a person. */
struct sv_err {
	int code;
	char msg[SV_ERR_MAX];
};

/* Sets e (if not NULL) and returns code, which must be a negative errno. */
int sv_err_set(struct sv_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Clears e. */
void sv_err_clear(struct sv_err *e);

/* ---- growable byte buffer ---------------------------------------------- */

struct sv_buf {
	uint8_t *p;
	size_t len, cap;
};

void sv_buf_init(struct sv_buf *b);
void sv_buf_fini(struct sv_buf *b);
/* Makes room for n more bytes.  0 or -ENOMEM. */
int sv_buf_reserve(struct sv_buf *b, size_t n);
int sv_buf_add(struct sv_buf *b, const void *p, size_t n);
int sv_buf_printf(struct sv_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- blobs: immutable, reference-counted bytes -------------------------- */

struct sv_blob {
	int refs; /* atomic */
	uint32_t spilled; /* made by sv_blob_new_spilled */
	size_t len;
	uint8_t data[];
};

/* A new blob of len bytes (contents undefined), one reference.  NULL if out
 * of memory. */
struct sv_blob *sv_blob_new(size_t len);
/* Likewise, one that lives in a file past the spill threshold, as an array
 * does (sv_tab_alloc: its pages shed past the arrays' window): for a big
 * blob kept for long and read in passes (a log's index record), filled a
 * piece at a time with sv_tab_touch counting each. */
struct sv_blob *sv_blob_new_spilled(size_t len);
/* A new blob holding a copy of p[0..len). */
struct sv_blob *sv_blob_dup(const void *p, size_t len);
/* A buffer that becomes a blob without a copy (a whole object read into
 * it): sv_buf_init_blob starts b with room for the blob's header, what
 * is added after is the blob's data, and sv_buf_take_blob makes it the
 * blob (b is empty again).  -ENOMEM / NULL if out of memory. */
int sv_buf_init_blob(struct sv_buf *b);
struct sv_blob *sv_buf_take_blob(struct sv_buf *b);
struct sv_blob *sv_blob_ref(struct sv_blob *b);
/* Drops a reference; frees at zero.  Accepts NULL. */
void sv_blob_unref(struct sv_blob *b);

/* ---- the decoded-data cache --------------------------------------------- */

/*
 * A least-recently-used map from a 64-bit key to a blob, holding at most
 * `cap` bytes of blobs.  Thread-safe (one internal mutex).  The cache holds
 * its own reference to each blob; a blob evicted while a reader still holds
 * it stays valid for that reader.
 */
struct sv_cache;

struct sv_cache_stats {
	uint64_t cap, bytes, entries, hits, misses, evictions;
};

struct sv_cache *sv_cache_new(uint64_t cap);
/* A handle on the same store and cap as `shared`, with keys of its own
 * (a container of a folder: one cap covers them all); NULL if out of
 * memory.  Freeing a handle drops its entries; the store goes with the
 * last handle.  Stats are the store's. */
struct sv_cache *sv_cache_share(struct sv_cache *shared);
void sv_cache_free(struct sv_cache *c);
/* Returns a new reference to the blob under key, or NULL. */
struct sv_blob *sv_cache_get(struct sv_cache *c, uint64_t key);
/* Stores a reference to b under key (replacing any), then evicts the least
 * recently used entries until the total fits the cap.  A blob larger than
 * the cap is not stored. */
void sv_cache_put(struct sv_cache *c, uint64_t key, struct sv_blob *b);
/* Room for n bytes being built (a view of a known size): entries are
 * evicted so that what is held and what is being built fit the cap
 * together, until sv_cache_unreserve gives the room back (before the
 * result is put). */
void sv_cache_reserve(struct sv_cache *c, uint64_t n);
void sv_cache_unreserve(struct sv_cache *c, uint64_t n);
/* Removes every key k of this handle with (k & mask) == (key & mask). */
void sv_cache_drop(struct sv_cache *c, uint64_t key, uint64_t mask);
void sv_cache_stats(struct sv_cache *c, struct sv_cache_stats *st);

/* ---- the workers that build ahead (ahead.c) ----------------------------- */

/* An owner of work for the pool: its queue is its own, under its own
 * lock; run() does one job and says whether more are left (and may post
 * its owner again as it takes a job, so that another worker takes the
 * next meanwhile).  The rest is the pool's (zero it before the first
 * post). */
struct sv_ahead {
	bool (*run)(struct sv_ahead *o);
	struct sv_ahead *next;
	bool listed, stopping;
	unsigned busy;
};

/* o has work: a worker will run it (the workers, as many as cores, are
 * started at the first post).  False if o is stopped or no worker could
 * be started: the work is not done. */
bool sv_ahead_post(struct sv_ahead *o);
/* o posts no more: waits for the run() under way, if any; none starts
 * after it returns. */
void sv_ahead_stop(struct sv_ahead *o);
/* Whether o was stopped (sv_ahead_stop has begun). */
bool sv_ahead_stopping(struct sv_ahead *o);
/* The workers started (for /.savefs/info). */
unsigned sv_ahead_workers(void);

/* This thread's id (for the nice of one thread). */
long sv_gettid(void);

/* ---- the persistent index (index.c) --------------------------------------- */

/*
 * What a format found in a container, kept between mounts: a record per
 * (format, version, what, container), used only while the container is
 * exactly as it was read (device, inode, size, mtime, ctime).  dir is the
 * store (sv_index_dir: $XDG_CACHE_HOME/savefs, or ~/.cache/savefs).
 */
/* The bytes a record takes beyond its payload (its header). */
#define SV_INDEX_HEAD 160

struct sv_index_key {
	const char *format;  /* the format's name (under 32 bytes) */
	uint32_t version;    /* of the format's record layout */
	const char *what;    /* which record of the container (under 32 bytes) */
	struct stat st;      /* the container as read */
};
/* The store's directory into buf: 0; -ENOENT with no home at all; -EPERM
 * if it is there but not this user's own (another owner, a link, open to
 * others: what it holds could be anyone's), and then nothing is kept. */
int sv_index_dir(char *buf, size_t size);
/* Removes the record for k, if there is one. */
void sv_index_drop(const char *dir, const struct sv_index_key *k);
/* The record for k: 0 and *out; -ENOENT if there is none; -ESTALE (made
 * for the container before it changed), -EBADMSG (damaged or foreign) or
 * -EFBIG (over max bytes), the record then removed. */
int sv_index_load(const char *dir, const struct sv_index_key *k, uint64_t max,
		  struct sv_blob **out);
/* Stores the record for k (dir made if need be), written beside and
 * renamed into place; then the least recently used records go until the
 * store holds at most cap bytes.  0 or -errno. */
int sv_index_store(const char *dir, const struct sv_index_key *k, const void *p, size_t n,
		   uint64_t cap);
/* (A cap of UINT64_MAX stores without trimming: the caller trims now and
 * then with sv_index_trim.) */
void sv_index_trim(const char *dir, uint64_t cap);
/* The same with the payload in pieces (written in turn, never copied
 * whole). */
struct iovec;
int sv_index_storev(const char *dir, const struct sv_index_key *k, const struct iovec *iov,
		    int niov, uint64_t cap);

/* ---- zlib, files, decimals ------------------------------------------------ */

/*
 * Inflates a zlib stream src[0..n) into exactly `want` bytes.  Fails with
 * -EBADMSG and a reason if the stream is not zlib, is corrupt, ends early,
 * or would produce more than want bytes.
 */
int sv_inflate(const uint8_t *src, size_t n, uint8_t *dst, size_t want,
	       struct sv_err *err);
/*
 * Inflates a zlib stream of unknown size into out (appended), producing at
 * most cap bytes: -EFBIG past it, -EBADMSG (with the reason) if the stream
 * is corrupt, ends early, or is followed by other bytes.
 */
int sv_inflate_any(const uint8_t *src, size_t n, uint64_t cap, struct sv_buf *out,
		   struct sv_err *err);
/* True if p starts like a zlib stream (deflate, a valid header check). */
bool sv_zlib_like(const uint8_t *p, size_t n);
/* Appends the zlib stream of p[0..n) at level (-1: default). */
int sv_deflate(const uint8_t *p, size_t n, int level, struct sv_buf *out);
/* A named step of a commit: a test names one in SAVEFS_TEST_KILL_AT and the
 * process is killed (SIGKILL) there, to check what a crash leaves; or in
 * SAVEFS_TEST_WAIT_AT, and the step creates "$SAVEFS_TEST_WAIT_FILE.at"
 * and waits (at most 10 minutes) until SAVEFS_TEST_WAIT_FILE exists, so
 * that a test can act at that moment (another writer). */
void sv_test_step(const char *step);
/* The shortest decimal that reads back as d (as a float when is_float):
 * positional from 1e-4 up to 1e16 ("64", "0.25", "-1.5"), else with an
 * exponent ("1.5e-05", "1e+16"); "NaN", "Infinity", "-Infinity".  The one
 * decimal writer of every view. */
void sv_shortest(char out[40], double d, bool is_float);
/* Appends the JSON text of json (a jansson json_t *) as json_dump_callback
 * writes it with flags, but every real as its shortest decimal (with ".0"
 * on a whole number, so that it reads back as a real).  0 or -ENOMEM. */
int sv_json_dump(const void *json, size_t flags, struct sv_buf *out);
/* The character at p[0..n) (n > 0) for a message: 'x', a UTF-8 character
 * kept whole ('é'), or "byte 0xNN". */
const char *sv_show_char(char buf[16], const uint8_t *p, size_t n);
/* True if s can be a file name: not empty, ".", ".." or longer than 255
 * bytes, and without '/' or control characters. */
bool sv_name_ok(const char *s);
/* Binary search over n sorted entries: the first i for which below(arg, i)
 * is false (the entries before it are below what is sought), n if none. */
size_t sv_lower_bound(size_t n, bool (*below)(const void *arg, size_t i), const void *arg);
/*
 * The newlines of a buffer in order, found 64 bytes at a time (a line scan
 * of millions of short lines costs a bit test a line, not a memchr call):
 * sv_nl_start(&f, p, e) then sv_nl_next(&f) gives each '\n' of [p, e) in
 * turn, then NULL.
 */
struct sv_nl {
	const uint8_t *win, *end; /* the window of `mask`, and the end */
	uint64_t mask;            /* its newlines not given yet */
};

static inline uint64_t sv_nl_mask(const uint8_t *p, size_t n)
{
	uint64_t m = 0;
	if (n >= 64) {
#if defined(__SSE2__)
		const __m128i nl = _mm_set1_epi8('\n');
		for (int i = 0; i < 4; i++) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
			m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) << (16 * i);
		}
		return m;
#else
		n = 64;
/* True if the first len bytes of key are one of list's names (a
 * NULL-terminated list, or NULL: none). */
bool sv_key_listed(const char *const *list, const char *key, size_t len);

#endif
	}
	for (size_t i = 0; i < n; i++)
		m |= (uint64_t)(p[i] == '\n') << i;
	return m;
}

static inline void sv_nl_start(struct sv_nl *f, const uint8_t *p, const uint8_t *e)
{
	f->win = p;
	f->end = e;
	f->mask = p < e ? sv_nl_mask(p, (size_t)(e - p)) : 0;
}

static inline const uint8_t *sv_nl_next(struct sv_nl *f)
{
	while (!f->mask) {
		if ((size_t)(f->end - f->win) <= 64)
			return NULL;
		f->win += 64;
		f->mask = sv_nl_mask(f->win, (size_t)(f->end - f->win));
	}
	const uint8_t *at = f->win + __builtin_ctzll(f->mask);
	f->mask &= f->mask - 1;
	return at;
}

/* A set of non-zero 64-bit values (the stored units a commit changes):
 * added to, sorted once, then asked.  Out of memory while adding, it
 * holds every value (`all`).  Start from {0}. */
struct sv_u64set {
	uint64_t *v;
	size_t n, cap;
	bool all;
};
void sv_u64set_add(struct sv_u64set *s, uint64_t x);
void sv_u64set_sort(struct sv_u64set *s);
/* After sv_u64set_sort: whether x is in it (all: always). */
bool sv_u64set_has(const struct sv_u64set *s, uint64_t x);
/* Empties it, keeping its memory; sv_u64set_fini frees it. */
void sv_u64set_clear(struct sv_u64set *s);
void sv_u64set_fini(struct sv_u64set *s);

/* Grows the array *v of *cap elements of `size` bytes to hold `need`
 * (doubling from 16): 0, or -ENOMEM with *v and *cap as they were. */
int sv_grow(void **v, size_t *cap, size_t need, size_t size);
/* The capacity sv_grow grows *cap to for need (*out): 0, or -ENOMEM if it
 * would overflow. */
int sv_grow_cap(size_t cap, size_t need, size_t size, size_t *out);

/*
 * Arrays that leave the heap when they grow big (tab.c): a format's index
 * that grows with its entries (a line table, a chunk table, a zip's
 * directory).  sv_tab_grow is sv_grow's twin: the array may move, 0 or
 * -errno with it as it was; past SV_TAB_SPILL bytes it lives in an
 * unlinked file mapped shared (in the persistent index's directory, else
 * /var/tmp; on the heap if neither takes it), whose pages sv_tab_shed
 * drops from the daemon's memory: they stay in the file and come back when
 * touched.  Free it with sv_tab_free, never free().  They are shed at known
 * points, never by a clock: what may have touched their pages is counted
 * (an element appended, a sort's runs, sv_tab_note for a client's lookups
 * and listings, sv_tab_touch for a format's pass over its index), and every
 * spill threshold of bytes or SV_TAB_LOOK_EVERY entries the process's
 * mapped file pages are looked at and shed past the window (SV_TAB_WINDOW
 * thresholds, 16 MB at the default 1 MB, unless configured smaller).  So the
 * daemon holds the window and one step of the arrays, not the whole index,
 * however busy the machine is.
 */
#define SV_TAB_SPILL (1u << 20)
#define SV_TAB_LOOK_EVERY 32u
/* What a lookup counts: a search of an index touches a page a step. */
#define SV_TAB_LOOKUP 4u
#define SV_TAB_WINDOW 16u   /* in spill thresholds */
int sv_tab_grow(void **v, size_t *cap, size_t need, size_t size);
/* A new array of n elements (at least one), zeroed: *v, *cap set; 0 or
 * -errno. */
int sv_tab_alloc(void **v, size_t *cap, size_t n, size_t size);
void sv_tab_free(void *p);
/* Sorts an array as qsort does (not stable).  One in a file past a
 * quarter of the window is sorted in runs through the heap and merged
 * through a second file (its pages touched in order, a few times); on
 * the heap, or with no second file to be had, qsort. */
void sv_tab_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *));
void sv_tab_shed(void);
/* n entries of a client's (a lookup counts SV_TAB_LOOKUP). */
void sv_tab_note(uint64_t n);
/* bytes of arrays read or written in a pass (a format's loop over its
 * index): call every so often as it goes. */
void sv_tab_touch(uint64_t bytes);
struct sv_tab_stats {
	uint64_t arrays, bytes; /* in files now */
	uint64_t sheds;
};
void sv_tab_stats(struct sv_tab_stats *out);
/* The spill directory ("": none, heap only; NULL: the index directory,
 * else /var/tmp), the threshold in bytes (SV_TAB_SPILL) and the cache's
 * cap the window is sized by (sv_tab_window_for; 0: none, SV_TAB_WINDOW
 * thresholds). */
void sv_tab_configure(const char *dir, size_t threshold, uint64_t cache_cap);
/* The window for a daemon whose cache is capped at cap: an eighth of it,
 * between 4 and SV_TAB_WINDOW thresholds, so that the arrays' pages held
 * grow with the memory the user gave the daemon. */
size_t sv_tab_window_for(uint64_t cap, size_t threshold);

/* Gives the whole pages of p's bytes [from, to) back to the system (their
 * content is lost: for memory about to be freed, read no more). */
void sv_give_back(const void *p, size_t from, size_t to);

/* The k-th name of a run of duplicates of name (k >= 2): "~k" before its
 * extension ("65534.bin" -> "65534~2.bin"), so that the extension stays
 * last.  The one spelling of a duplicate in every tree.  Returns what
 * snprintf returns. */
int sv_dup_name(char *out, size_t cap, const char *name, unsigned k);
/*
 * Writes a new file at path, whole or not at all: fill(fd, arg) writes it
 * into a temporary beside path (".savefs-XXXXXX" in its directory), which
 * is then renamed over path, so that a file already there (or a link) is
 * replaced, never written through.  mode: the new file's permissions (the
 * umask applied), or 0 for the temporary's 0600.  0 or -errno (fill's).
 */
int sv_write_replace(const char *path, mode_t mode, int (*fill)(int fd, void *arg), void *arg);
/*
 * Opens rel (names joined by '/') beneath the directory dirfd, as
 * openat(2) with flags and mode would, except that no part of rel may be a
 * symbolic link (the last included: -ELOOP) nor lead out of dirfd
 * (-EXDEV): what a folder shows is never followed out of it.  A descriptor,
 * or -errno.
 */
int sv_open_beneath(int dirfd, const char *rel, int flags, mode_t mode);
/* The directory holding rel beneath dirfd (as sv_open_beneath opens it,
 * O_PATH), for an *at(2) call on *leaf, rel's last part: a descriptor to
 * close, or -errno. */
int sv_parent_beneath(int dirfd, const char *rel, const char **leaf);
/* True if a name of a real file may be shown as it is: not empty, "." or
 * "..", no '/', at most 255 bytes (control characters included: a
 * directory may hold them, and FUSE passes them). */
bool sv_real_name_ok(const char *s);
/* True if path (which exists) is dir or below it, symbolic links followed. */
bool sv_path_within(const char *path, const char *dir);
/* The value of a hex digit (either case), or -1. */
int sv_hexval(int c);
/* Writes all of p to fd, retrying short writes.  0 or -errno. */
int sv_write_all(int fd, const void *p, size_t n);
/* Copies n bytes from fd_in at off to the current position of fd_out, with
 * copy_file_range(2) where the kernel can, else through a buffer. */
int sv_copy_range(int fd_in, uint64_t off, int fd_out, uint64_t n);

/*
 * The one parser of numbers that come from outside (a server's headers
 * and listings): s[0..n) must be decimal digits only (no sign, no space),
 * at most max (which is at most INT64_MAX): 0 and *out, or -EINVAL.
 */
int sv_parse_count(const char *s, size_t n, uint64_t max, uint64_t *out);
/* Percent-decodes s[0..n) into out (cap bytes, terminated): 0, or
 * -EINVAL for a bad escape or a NUL, -ENAMETOOLONG past cap. */
int sv_percent_decode(const char *s, size_t n, char *out, size_t cap);
/* A location as it may be shown: a URL's password and a presigned
 * URL's signature, credential and token replaced by "***" (a new
 * string, or NULL without memory). */
char *sv_location_shown(const char *location);

/* Parses "64M", "1G", "4096", "512K" into bytes.  0 or -EINVAL. */
int sv_parse_size(const char *s, uint64_t *out);

/* True if the first len bytes of key are one of list's names (a
 * NULL-terminated list, or NULL: none). */
bool sv_key_listed(const char *const *list, const char *key, size_t len);

#endif
