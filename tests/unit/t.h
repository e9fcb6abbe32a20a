/*
 * t.h - a tiny assertion kit for the unit tests: no framework, no FUSE.
 *
 * Each check counts; a failed check prints "file:line: what: expected X,
 * got Y" and the test goes on, so one run shows every failure.  A test's
 * main() ends with `return t_done();`, which prints the tally and returns
 * 0 if every check passed, 1 otherwise (meson's pass and fail; 77 skips).
 *
 *   T_OK(cond)               a condition holds
 *   T_INT(want, got)         signed integers are equal
 *   T_UINT(want, got)        unsigned integers are equal
 *   T_STR(want, got)         C strings are equal (NULL allowed)
 *   T_HAS(haystack, needle)  a string contains another
 *   T_MEM(want, got, n)      n bytes are equal (the first difference shown)
 *
 * Not thread-safe: check from the main thread only.
 */
#ifndef T_H
#define T_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int t_checks, t_fails;

static inline int t_note(int ok)
{
	t_checks++;
	if (!ok)
		t_fails++;
	return ok;
}

static inline void t_ok(int ok, const char *file, int line, const char *what)
{
	if (!t_note(ok))
		fprintf(stderr, "%s:%d: %s: expected true, got false\n", file, line, what);
}

static inline void t_int(intmax_t want, intmax_t got, const char *file, int line,
			 const char *what)
{
	if (!t_note(want == got))
		fprintf(stderr, "%s:%d: %s: expected %jd, got %jd\n", file, line, what, want,
			got);
}

static inline void t_uint(uintmax_t want, uintmax_t got, const char *file, int line,
			  const char *what)
{
	if (!t_note(want == got))
		fprintf(stderr, "%s:%d: %s: expected %ju (0x%jx), got %ju (0x%jx)\n", file,
			line, what, want, want, got, got);
}

static inline void t_str(const char *want, const char *got, const char *file, int line,
			 const char *what)
{
	int ok = want && got ? !strcmp(want, got) : want == got;
	if (!t_note(ok))
		fprintf(stderr, "%s:%d: %s: expected \"%s\", got \"%s\"\n", file, line, what,
			want ? want : "(null)", got ? got : "(null)");
}

static inline void t_has(const char *hay, const char *needle, const char *file, int line,
			 const char *what)
{
	int ok = hay && needle && strstr(hay, needle);
	if (!t_note(ok))
		fprintf(stderr, "%s:%d: %s: expected to contain \"%s\", got \"%s\"\n", file,
			line, what, needle ? needle : "(null)", hay ? hay : "(null)");
}

static inline void t_mem(const void *want, const void *got, size_t n, const char *file,
			 int line, const char *what)
{
	const uint8_t *a = want, *b = got;
	size_t i = 0;
	if (a && b)
		while (i < n && a[i] == b[i])
			i++;
	int ok = a && b ? i == n : n == 0;
	if (!t_note(ok)) {
		if (a && b)
			fprintf(stderr,
				"%s:%d: %s: %zu bytes differ first at %zu: expected 0x%02x, got 0x%02x\n",
				file, line, what, n, i, a[i], b[i]);
		else
			fprintf(stderr, "%s:%d: %s: expected %zu bytes, got a NULL pointer\n", file,
				line, what, n);
	}
}

#define T_OK(c) t_ok(!!(c), __FILE__, __LINE__, #c)
#define T_INT(w, g) t_int((intmax_t)(w), (intmax_t)(g), __FILE__, __LINE__, #g)
#define T_UINT(w, g) t_uint((uintmax_t)(w), (uintmax_t)(g), __FILE__, __LINE__, #g)
#define T_STR(w, g) t_str((w), (g), __FILE__, __LINE__, #g)
#define T_HAS(h, n) t_has((h), (n), __FILE__, __LINE__, #h)
#define T_MEM(w, g, n) t_mem((w), (g), (n), __FILE__, __LINE__, #g)

/* Prints the tally; the exit status for main(). */
static inline int t_done(void)
{
	fprintf(stderr, "%d checks, %d failed\n", t_checks, t_fails);
	return t_fails ? 1 : 0;
}

#endif
