/*
 * faultshim.c - an LD_PRELOAD library for the end-to-end tests: it makes
 * one call of the daemon fail, or stop until the test lets it go, so that
 * a commit can be broken at each of its steps, or another program can act
 * at a chosen instant inside it.  Nothing of it is in savefs itself.
 *
 * Environment:
 *   SVF_ARM=PATH       calls count only while PATH exists; when the shim
 *                      acts, it removes PATH (one shot), unless SVF_KEEP=1
 *   SVF_FAIL=NAME      the call to fail (fsync, write, pwrite, ftruncate,
 *                      renameat2, ...)
 *   SVF_NTH=N[,M...]   act on the N-th counted call (default 1), or on each
 *                      of a list of them
 *   SVF_ERRNO=N        the errno it fails with (default EIO)
 *   SVF_MATCH=TEXT     count only calls whose path (or, for a descriptor,
 *                      the path it names) contains TEXT
 *   SVF_PAUSE=NAME     instead of failing, before that call: create
 *                      DIR/reached, wait (at most 20 s) for DIR/go, go on
 *                      (the second call of a list: reached2 and go2, ...)
 *   SVF_DIR=DIR        the directory of reached/go
 * Each action is written to stderr as "faultshim: ...".
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static int counted;

static bool armed(void)
{
	const char *arm = getenv("SVF_ARM");
	return arm && !access(arm, F_OK);
}

static bool path_matches(const char *path)
{
	const char *m = getenv("SVF_MATCH");
	return !m || (path && strstr(path, m));
}

static bool fd_matches(int fd)
{
	if (!getenv("SVF_MATCH"))
		return true;
	char link[64], path[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n < 0)
		return false;
	path[n] = '\0';
	return path_matches(path);
}

static void disarm(void)
{
	const char *keep = getenv("SVF_KEEP");
	if (!keep || strcmp(keep, "1"))
		unlink(getenv("SVF_ARM"));
}

/* The k-th pause (from 1) waits at DIR/reached and DIR/go, the next ones
 * at reached2/go2, reached3/go3, ... */
static void pause_here(const char *name, int k)
{
	const char *dir = getenv("SVF_DIR");
	char p[4096], sfx[16] = "";
	if (!dir)
		return;
	if (k > 1)
		snprintf(sfx, sizeof sfx, "%d", k);
	fprintf(stderr, "faultshim: paused before %s\n", name);
	snprintf(p, sizeof p, "%s/reached%s", dir, sfx);
	close(open(p, O_WRONLY | O_CREAT, 0644));
	snprintf(p, sizeof p, "%s/go%s", dir, sfx);
	for (int i = 0; i < 2000 && access(p, F_OK); i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	fprintf(stderr, "faultshim: going on with %s\n", name);
}

/* 0: make the call; else the errno to fail it with.  `hit` says whether
 * this call is one of those counted (its path matches). */
static int act(const char *name, bool hit)
{
	const char *fail = getenv("SVF_FAIL"), *pause = getenv("SVF_PAUSE");
	bool f = fail && !strcmp(fail, name), p = pause && !strcmp(pause, name);
	if ((!f && !p) || !hit || !armed())
		return 0;
	/* SVF_NTH: one number, or a list ("1,2") of the counted calls to act
	 * on; the shim disarms after the last. */
	const char *nth = getenv("SVF_NTH");
	int n = __atomic_add_fetch(&counted, 1, __ATOMIC_SEQ_CST), k = 0, last = 0;
	bool mine = false;
	for (const char *q = nth ? nth : "1"; *q;) {
		int v = atoi(q);
		k += !mine;
		mine |= v == n;
		last = v;
		q += strspn(q, "0123456789");
		q += *q == ',';
	}
	if (!mine)
		return 0;
	if (n == last)
		disarm();
	if (p) {
		pause_here(name, k);
		return 0;
	}
	const char *e = getenv("SVF_ERRNO");
	int code = e ? atoi(e) : EIO;
	fprintf(stderr, "faultshim: %s fails with %s\n", name, strerror(code));
	return code;
}

#define REAL(ret, name, ...) \
	static ret (*real)(__VA_ARGS__); \
	if (!real) \
		*(void **)&real = dlsym(RTLD_NEXT, name)

#define FAIL_IF(name, hit, bad) \
	do { \
		int code_ = act(name, hit); \
		if (code_) { \
			errno = code_; \
			return bad; \
		} \
	} while (0)

int mkostemp(char *tmpl, int flags)
{
	REAL(int, "mkostemp", char *, int);
	FAIL_IF("mkostemp", path_matches(tmpl), -1);
	return real(tmpl, flags);
}

int fchmod(int fd, mode_t mode)
{
	REAL(int, "fchmod", int, mode_t);
	FAIL_IF("fchmod", fd_matches(fd), -1);
	return real(fd, mode);
}

ssize_t write(int fd, const void *p, size_t n)
{
	REAL(ssize_t, "write", int, const void *, size_t);
	FAIL_IF("write", fd_matches(fd), -1);
	return real(fd, p, n);
}

ssize_t copy_file_range(int in, loff_t *off_in, int out, loff_t *off_out, size_t n,
			unsigned int flags)
{
	REAL(ssize_t, "copy_file_range", int, loff_t *, int, loff_t *, size_t, unsigned int);
	FAIL_IF("copy_file_range", fd_matches(out), -1);
	return real(in, off_in, out, off_out, n, flags);
}

int fsync(int fd)
{
	REAL(int, "fsync", int);
	FAIL_IF("fsync", fd_matches(fd), -1);
	return real(fd);
}

int fdatasync(int fd)
{
	REAL(int, "fdatasync", int);
	FAIL_IF("fdatasync", fd_matches(fd), -1);
	return real(fd);
}

int renameat2(int od, const char *op, int nd, const char *np, unsigned int flags)
{
	REAL(int, "renameat2", int, const char *, int, const char *, unsigned int);
	FAIL_IF("renameat2", path_matches(op) || path_matches(np), -1);
	return real(od, op, nd, np, flags);
}

int rename(const char *op, const char *np)
{
	REAL(int, "rename", const char *, const char *);
	FAIL_IF("rename", path_matches(op) || path_matches(np), -1);
	return real(op, np);
}

int stat(const char *path, struct stat *st)
{
	REAL(int, "stat", const char *, struct stat *);
	FAIL_IF("stat", path_matches(path), -1);
	return real(path, st);
}

int lstat(const char *path, struct stat *st)
{
	REAL(int, "lstat", const char *, struct stat *);
	FAIL_IF("lstat", path_matches(path), -1);
	return real(path, st);
}

int flock(int fd, int op)
{
	REAL(int, "flock", int, int);
	FAIL_IF("flock", fd_matches(fd), -1);
	return real(fd, op);
}

ssize_t pread(int fd, void *p, size_t n, off_t off)
{
	REAL(ssize_t, "pread", int, void *, size_t, off_t);
	FAIL_IF("pread", fd_matches(fd), -1);
	return real(fd, p, n, off);
}

ssize_t pread64(int fd, void *p, size_t n, off64_t off)
{
	REAL(ssize_t, "pread64", int, void *, size_t, off64_t);
	FAIL_IF("pread", fd_matches(fd), -1);
	return real(fd, p, n, off);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
	REAL(ssize_t, "pwrite", int, const void *, size_t, off_t);
	FAIL_IF("pwrite", fd_matches(fd), -1);
	return real(fd, p, n, off);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off64_t off)
{
	REAL(ssize_t, "pwrite64", int, const void *, size_t, off64_t);
	FAIL_IF("pwrite", fd_matches(fd), -1);
	return real(fd, p, n, off);
}

int ftruncate(int fd, off_t len)
{
	REAL(int, "ftruncate", int, off_t);
	FAIL_IF("ftruncate", fd_matches(fd), -1);
	return real(fd, len);
}

int ftruncate64(int fd, off64_t len)
{
	REAL(int, "ftruncate64", int, off64_t);
	FAIL_IF("ftruncate", fd_matches(fd), -1);
	return real(fd, len);
}

ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
	REAL(ssize_t, "pwritev2", int, const struct iovec *, int, off_t, int);
	FAIL_IF("pwritev2", fd_matches(fd), -1);
	return real(fd, iov, n, off, flags);
}

/* open and open64: the mode is there only with O_CREAT or O_TMPFILE. */
static int open_as(int (*real)(const char *, int, ...), const char *path, int flags,
		   va_list ap)
{
	mode_t mode = flags & (O_CREAT | O_TMPFILE) ? va_arg(ap, mode_t) : 0;
	FAIL_IF("open", path_matches(path), -1);
	return real(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	REAL(int, "open", const char *, int, ...);
	va_list ap;
	va_start(ap, flags);
	int fd = open_as(real, path, flags, ap);
	va_end(ap);
	return fd;
}

/* The names a program built with _FILE_OFFSET_BITS=64 calls. */
int mkostemp64(char *tmpl, int flags)
{
	REAL(int, "mkostemp64", char *, int);
	FAIL_IF("mkostemp", path_matches(tmpl), -1);
	return real(tmpl, flags);
}

int stat64(const char *path, struct stat64 *st)
{
	REAL(int, "stat64", const char *, struct stat64 *);
	FAIL_IF("stat", path_matches(path), -1);
	return real(path, st);
}

int lstat64(const char *path, struct stat64 *st)
{
	REAL(int, "lstat64", const char *, struct stat64 *);
	FAIL_IF("lstat", path_matches(path), -1);
	return real(path, st);
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int n, off64_t off, int flags)
{
	REAL(ssize_t, "pwritev64v2", int, const struct iovec *, int, off64_t, int);
	FAIL_IF("pwritev2", fd_matches(fd), -1);
	return real(fd, iov, n, off, flags);
}

int open64(const char *path, int flags, ...)
{
	REAL(int, "open64", const char *, int, ...);
	va_list ap;
	va_start(ap, flags);
	int fd = open_as(real, path, flags, ap);
	va_end(ap);
	return fd;
}
