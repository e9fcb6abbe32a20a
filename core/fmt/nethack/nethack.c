/*
 * nethack.c - NetHack 4 game logs (.nhgame), mounted live.
 *
 * The log is a text file a running game appends to: three header lines,
 * then one line per event (ASCII, '\n' ends).  Facts (checked against the
 * engine's log.c and files.c): ../shared/formats/nethack4.md.
 *
 *   line 1   NHGAME <save|done> <recovery count, 8 hex> <version>     31 bytes
 *   line 2   status line, right-justified in 78 columns                79 bytes
 *   line 3   <start us, hex> 0 <mode> <base64 name> <role> <race> <gender> <align>
 *   body     *<8 hex> <payload>   backup (the first one's number points at
 *                                 the latest backup, later ones at the
 *                                 previous one)
 *            ~<payload>           diff against the previous save
 *            a-z...               command and its arguments
 *            +<hex>               microseconds since the previous time line
 *            P D K Y M O L B Q    answers to prompts, bones, game over
 *
 * The tree:
 *
 *   log                  the file itself up to its last newline; appends
 *                        of whole lines land at once, under the game's
 *                        locking rules; truncating to a line start rewinds
 *   header.json          lines 1-3 decoded
 *   transcript.txt       one line per log line: number, time, kind, content
 *   saves/<line>.sav     each backup's save
 *   diffs/<line>.mdiff   each diff, decoded (not applied)
 *   states/<line>.sav    the save as it stands after each backup or diff
 *
 * Opening scans the lines once (large reads, newlines found 64 bytes at a
 * time; a big log by two threads, one per half) and keeps, per
 * backup or diff line, its place and the backup its state starts from, and
 * a checkpoint every CK_EVERY lines from which the transcript is made
 * again on demand: the transcript and the log are streams, never held
 * whole.  The three directories are filled on first use.  A state is
 * rebuilt from the nearest backup, or from the last state made (kept,
 * one), so reading every state in order is linear.
 *
 * Invariants: nh->end is the offset after the last complete line scanned;
 * everything before it is in ents/ck.  The state lock (st_lock) protects
 * the kept state only; everything else changes under the container's write
 * lock (write, truncate, sync, refresh) and is read under its read lock.
 */
#include "nethack_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *const kind_names[K_NKINDS] = {
	"backup", "diff", "command", "time", "getpos", "getdir", "key", "yesno",
	"menu", "objmenu", "text", "bones", "gameover", "bad",
};

static const char *const dir_names[11] = {
	"W", "NW", "N", "NE", "E", "SE", "S", "SW", "up", "down", "self",
};

static const char *const mode_names[4] = {"normal", "explore", "wizard", "set-seed"};

/* ---- small parsers ------------------------------------------------------------ */

/* Parses exactly n hex digits (1..16); false if any is not one. */
bool sv_nh_parse_hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (!n || n > 16)
		return false;
	for (size_t i = 0; i < n; i++) {
		int d = sv_hexval(s[i]);
		if (d < 0)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return true;
}

/* A decimal integer, optionally negative, of at most 9 digits. */
static bool parse_int(const char *s, size_t n, long *out)
{
	size_t i = 0;
	bool neg = false;
	if (n && s[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i == n || n - i > 9)
		return false;
	long v = 0;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = neg ? -v : v;
	return true;
}

/* Writes t (microseconds since the epoch) as 2026-01-02T03:04:05.678901Z:
 * always 27 characters (times past year 9999 show as its last moment). */
static void iso_time(uint64_t t, char out[28])
{
	uint64_t max = 253402300799999999ull;
	if (t > max)
		t = max;
	time_t sec = (time_t)(t / 1000000);
	struct tm tm;
	gmtime_r(&sec, &tm);
	char tmp[96];
	snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(t % 1000000));
	memcpy(out, tmp, 27);
	out[27] = '\0';
}

/* Appends a quoted, escaped string: printable ASCII as is, the rest as
 * C escapes, so that every transcript line stays one line of text. */
static void add_quoted(struct sv_buf *b, const uint8_t *p, size_t n)
{
	sv_buf_add(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		uint8_t ch = p[i];
		if (ch == '"' || ch == '\\') {
			char e[2] = {'\\', (char)ch};
			sv_buf_add(b, e, 2);
		} else if (ch >= 0x20 && ch < 0x7f) {
			sv_buf_add(b, &ch, 1);
		} else if (ch == '\n') {
			sv_buf_add(b, "\\n", 2);
		} else if (ch == '\t') {
			sv_buf_add(b, "\\t", 2);
		} else {
			sv_buf_printf(b, "\\x%02x", ch);
		}
	}
	sv_buf_add(b, "\"", 1);
}

static void add_char(struct sv_buf *b, uint8_t ch)
{
	if (ch >= 0x20 && ch < 0x7f && ch != '\'' && ch != '\\')
		sv_buf_printf(b, "'%c'", ch);
	else if (ch == '\'' || ch == '\\')
		sv_buf_printf(b, "'\\%c'", ch);
	else
		sv_buf_printf(b, "'\\x%02x'", ch);
}

/* Appends v in decimal (no printf: the scan measures every line). */
static void add_u64(struct sv_buf *b, uint64_t v)
{
	char d[20];
	int n = 0;
	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	char r[20];
	for (int i = 0; i < n; i++)
		r[i] = d[n - 1 - i];
	sv_buf_add(b, r, (size_t)n);
}

static void add_str(struct sv_buf *b, const char *s)
{
	sv_buf_add(b, s, strlen(s));
}

/* ---- one line ------------------------------------------------------------------- */

/*
 * What a body line is and says.  The line is line[0..len) of a longer
 * line of full length `full` (a payload line is classified by its head and its
 * last two bytes `tail`).  Appends its content (the transcript's last
 * column) to out, or on a malformed line a reason to why (out then holds
 * nothing useful).  *delta receives a time line's microseconds, *size a
 * backup's, diff's or bones file's decoded size (both 0 otherwise).
 */

static bool payload_size_of(const struct line_view *l, size_t at, uint64_t *size,
			    bool *compressed)
{
	/* A payload starts at `at`: "$len$base64" or plain base64. */
	uint64_t plen = l->full - at;
	*compressed = false;
	if (plen && l->p[at] == '$') {
		size_t i = at + 1;
		uint64_t v = 0;
		while (i < l->n && l->p[i] >= '0' && l->p[i] <= '9' && i - at <= 12)
			v = v * 10 + (uint64_t)(l->p[i++] - '0');
		if (i == at + 1 || i >= l->n || l->p[i] != '$' || i - at > 12)
			return false;
		uint64_t rest = l->full - (i + 1);
		if (rest % 4 || rest == 0)
			return false;
		*compressed = true;
		*size = v;
		return true;
	}
	if (plen % 4)
		return false;
	uint64_t pad = 0;
	if (plen >= 2) {
		pad = l->tail[1] == '=' ? (l->tail[0] == '=' ? 2 : 1) : 0;
	}
	*size = plen / 4 * 3 - pad;
	return true;
}

/* A string argument: a payload (plain or compressed base64) of at most
 * MAX_SMALL_LINE bytes. */
static int parse_b64_arg(const char *s, size_t n, struct sv_buf *out, const char **why)
{
	struct sv_err e;
	if (sv_nh_payload_decode(s, n, MAX_SMALL_LINE, out, &e)) {
		*why = "not base64";
		return -1;
	}
	return 0;
}

/* A backup ('*') or diff ('~') line, not empty: K_BACKUP, K_DIFF or K_BAD
 * (and why), its payload's size, whether compressed. */
static enum kind payload_line(const struct line_view *l, uint64_t *size, bool *comp,
			      const char **why)
{
	const char *p = l->p;
	if (p[0] == '*') {
		uint64_t ptr;
		if (l->full < 11 || l->n < 10 || !sv_nh_parse_hex(p + 1, 8, &ptr) || p[9] != ' ') {
			*why = "a backup line is not \"*<8 hex digits> <payload>\"";
			return K_BAD;
		}
		if (!payload_size_of(l, 10, size, comp)) {
			*why = "a backup's payload is not base64 or $length$base64";
			return K_BAD;
		}
		return K_BACKUP;
	}
	if (!payload_size_of(l, 1, size, comp) || l->full < 2) {
		*why = "a diff's payload is not base64 or $length$base64";
		return K_BAD;
	}
	return K_DIFF;
}

static enum kind parse_line(const struct line_view *l, struct sv_buf *out,
			    uint64_t *delta, uint64_t *size, const char **why)
{
	const char *p = l->p;
	size_t n = l->n;
	*why = NULL;
	*delta = *size = 0;
	if (l->full == 0) {
		*why = "an empty line";
		return K_BAD;
	}
	char k = p[0];
	bool comp;
	if (k == '*' || k == '~') {
		enum kind kind = payload_line(l, size, &comp, why);
		if (kind == K_BACKUP) {
			add_str(out, "save ");
			add_u64(out, *size);
			add_str(out, comp ? " bytes compressed, pointer " : " bytes, pointer ");
			sv_buf_add(out, p + 1, 8);
		} else if (kind == K_DIFF) {
			add_str(out, "diff ");
			add_u64(out, *size);
			add_str(out, comp ? " bytes compressed" : " bytes");
		}
		return kind;
	}
	if (k == 'B') {
		if (l->full == 2 && p[1] == '!') {
			sv_buf_printf(out, "none found");
			return K_BONES;
		}
		if (l->full < 2 || !payload_size_of(l, 1, size, &comp)) {
			*why = "a bones line is not \"B!\" or B<payload>";
			return K_BAD;
		}
		sv_buf_printf(out, "bones file %llu bytes%s", (unsigned long long)*size,
			      comp ? " compressed" : "");
		return K_BONES;
	}
	/* Every other kind is short: the whole line is here. */
	if (l->full != n) {
		*why = "a line of this kind this long";
		return K_BAD;
	}
	for (size_t i = 0; i < n; i++) {
		if ((uint8_t)p[i] < 0x20 || (uint8_t)p[i] > 0x7e) {
			*why = "a control or non-ASCII byte";
			return K_BAD;
		}
	}
	long v;
	switch (k) {
	case '+':
		if (!sv_nh_parse_hex(p + 1, n - 1, delta)) {
			*why = "a time line is not +<hex digits>";
			return K_BAD;
		}
		sv_buf_add(out, "+", 1);
		add_u64(out, *delta / 1000000);
		{
			char frac[8] = {'.'};
			uint64_t f = *delta % 1000000;
			for (int i = 6; i >= 1; i--, f /= 10)
				frac[i] = (char)('0' + f % 10);
			frac[7] = ' ';
			sv_buf_add(out, frac, 8);
			sv_buf_add(out, "s", 1);
		}
		return K_TIME;
	case 'P': {
		if (n == 2 && p[1] == '!') {
			sv_buf_printf(out, "cancelled");
			return K_GETPOS;
		}
		const char *comma = memchr(p + 1, ',', n - 1);
		long x, y;
		char key = n >= 2 ? p[n - 1] : 0;
		if (!comma || !strchr(".,:;", key) || !key ||
		    !parse_int(p + 1, (size_t)(comma - p - 1), &x) ||
		    !parse_int(comma + 1, (size_t)(p + n - 1 - comma - 1), &y) || x < 0 || y < 0) {
			*why = "a getpos line is not P! or P<x>,<y><key>";
			return K_BAD;
		}
		sv_buf_printf(out, "%ld,%ld key '%c'", x, y, key);
		return K_GETPOS;
	}
	case 'D':
		if (!parse_int(p + 1, n - 1, &v) || v < -1 || v > 10) {
			*why = "a getdir line is not D<-1..10>";
			return K_BAD;
		}
		add_str(out, v < 0 ? "cancelled" : dir_names[v]);
		return K_GETDIR;
	case 'K': {
		const char *comma = memchr(p + 1, ',', n - 1);
		size_t kl = comma ? (size_t)(comma - p - 1) : n - 1;
		long cnt = 0;
		if (!parse_int(p + 1, kl, &v) ||
		    (comma && (!parse_int(comma + 1, (size_t)(p + n - comma - 1), &cnt) || cnt < 0))) {
			*why = "a key line is not K<code> or K<code>,<count>";
			return K_BAD;
		}
		sv_buf_printf(out, "%ld", v);
		if (v >= 0x20 && v < 0x7f) {
			sv_buf_add(out, " ", 1);
			add_char(out, (uint8_t)v);
		}
		if (comma)
			sv_buf_printf(out, ", count %ld", cnt);
		return K_KEY;
	}
	case 'Y':
		if (n != 2) {
			*why = "a yes/no line is not Y<char>";
			return K_BAD;
		}
		add_char(out, (uint8_t)p[1]);
		return K_YESNO;
	case 'M':
	case 'O': {
		enum kind kd = k == 'M' ? K_MENU : K_OBJMENU;
		if (n == 2 && p[1] == '!') {
			sv_buf_printf(out, "cancelled");
			return kd;
		}
		if (n == 1) {
			sv_buf_printf(out, "nothing");
			return kd;
		}
		size_t i = 1;
		while (i <= n) {
			size_t j = i;
			while (j < n && p[j] != ':')
				j++;
			const char *comma = k == 'O' ? memchr(p + i, ',', j - i) : NULL;
			size_t il = comma ? (size_t)(comma - p - (ptrdiff_t)i) : j - i;
			uint64_t id;
			long cnt = 0;
			if (!sv_nh_parse_hex(p + i, il, &id) || id < 4 ||
			    (comma && (!parse_int(comma + 1, (size_t)(p + j - comma - 1), &cnt) ||
				       cnt < 0))) {
				*why = k == 'M' ? "a menu line is not M!, M or :-joined hex ids"
						: "an object menu line is not O!, O or :-joined "
						  "hex ids with counts";
				return K_BAD;
			}
			sv_buf_printf(out, "%s%llu", i > 1 ? ", " : "", (unsigned long long)(id - 4));
			if (comma)
				sv_buf_printf(out, " x%ld", cnt);
			i = j + 1;
		}
		return kd;
	}
	case 'L': {
		struct sv_buf s;
		sv_buf_init(&s);
		if (parse_b64_arg(p + 1, n - 1, &s, why)) {
			sv_buf_fini(&s);
			*why = "a text line is not L<base64>";
			return K_BAD;
		}
		/* A cancel: the byte 0x1b (the engine writes it with its NUL). */
		if ((s.len == 1 || (s.len == 2 && !s.p[1])) && s.p[0] == 0x1b)
			sv_buf_printf(out, "cancelled");
		else
			add_quoted(out, s.p, s.len && !s.p[s.len - 1] ? s.len - 1 : s.len);
		sv_buf_fini(&s);
		return K_TEXT;
	}
	case 'Q':
		if (n != 1) {
			*why = "a game-over line is not Q";
			return K_BAD;
		}
		return K_GAMEOVER;
	default:
		break;
	}
	if (k < 'a' || k > 'z') {
		*why = "a line of an unknown kind";
		return K_BAD;
	}
	/* A command: its name, then arguments. */
	size_t i = 0;
	while (i < n && p[i] != ' ')
		i++;
	for (size_t j = 0; j < i; j++) {
		char ch = p[j];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) {
			*why = "a command name that is not lower-case letters";
			return K_BAD;
		}
	}
	sv_buf_add(out, p, i);
	bool first = true;
	while (i < n) {
		i++; /* the space */
		size_t j = i;
		while (j < n && p[j] != ' ')
			j++;
		const char *a = p + i;
		size_t al = j - i;
		sv_buf_add(out, first ? ": " : ", ", 2);
		first = false;
		long x, y;
		if (al < 2) {
			*why = "an empty command argument";
			return K_BAD;
		}
		switch (a[0]) {
		case 'D':
			if (!parse_int(a + 1, al - 1, &v) || v < -1 || v > 10) {
				*why = "a direction argument is not D<-1..10>";
				return K_BAD;
			}
			add_str(out, "direction ");
			add_str(out, v < 0 ? "none" : dir_names[v]);
			break;
		case 'P': {
			const char *comma = memchr(a + 1, ',', al - 1);
			if (!comma || !parse_int(a + 1, (size_t)(comma - a - 1), &x) ||
			    !parse_int(comma + 1, (size_t)(a + al - comma - 1), &y)) {
				*why = "a position argument is not P<x>,<y>";
				return K_BAD;
			}
			sv_buf_printf(out, "position %ld,%ld", x, y);
			break;
		}
		case 'I':
		case 'S':
			if (al != 2) {
				*why = "an item or spell argument is not one character";
				return K_BAD;
			}
			add_str(out, a[0] == 'I' ? "item " : "spell ");
			add_char(out, (uint8_t)a[1]);
			break;
		case 'T': {
			struct sv_buf s;
			sv_buf_init(&s);
			if (parse_b64_arg(a + 1, al - 1, &s, why)) {
				sv_buf_fini(&s);
				*why = "a text argument is not T<base64>";
				return K_BAD;
			}
			sv_buf_add(out, "text ", 5);
			add_quoted(out, s.p, s.len && !s.p[s.len - 1] ? s.len - 1 : s.len);
			sv_buf_fini(&s);
			break;
		}
		case 'L':
			if (!parse_int(a + 1, al - 1, &v)) {
				*why = "a limit argument is not L<number>";
				return K_BAD;
			}
			add_str(out, "limit ");
			if (v < 0)
				sv_buf_add(out, "-", 1);
			add_u64(out, (uint64_t)(v < 0 ? -v : v));
			break;
		default:
			*why = "a command argument of an unknown kind";
			return K_BAD;
		}
		i = j;
	}
	return K_COMMAND;
}

static unsigned digits(uint64_t v)
{
	unsigned n = 1;
	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* The start of a transcript line: "000123 2026-...Z kind    ". */
#define PREFIX_LEN(line) ((digits(line) < 6 ? 6 : digits(line)) + 37)


static const char *iso_cached(struct iso_cache *ic, uint64_t t)
{
	uint64_t sec = t / 1000000;
	if (!ic->valid || ic->sec != sec) {
		iso_time(t, ic->text);
		ic->sec = sec;
		ic->valid = true;
	} else if (t <= 253402300799999999ull) {
		unsigned us = (unsigned)(t % 1000000);
		for (int i = 25; i >= 20; i--, us /= 10)
			ic->text[i] = (char)('0' + us % 10);
	}
	return ic->text;
}

/*
 * The transcript line of a body line: its length, and with out (emptied
 * first) the line itself.  content is scratch space.  *kind, *delta and
 * *size (may be NULL) are what parse_line says; *why a reason if it is bad.
 */
uint64_t sv_nh_transcript_line(uint32_t line, uint64_t time, const struct line_view *l,
				struct sv_buf *out, struct sv_buf *content,
				struct iso_cache *ic, enum kind *kind, uint64_t *delta,
				uint64_t *size, const char **why)
{
	uint64_t ignored;
	content->len = 0;
	*kind = parse_line(l, content, delta, size ? size : &ignored, why);
	uint64_t len = PREFIX_LEN(line) + 1; /* the newline */
	if (*kind == K_BAD)
		len += 1 + strlen(*why);
	else if (content->len)
		len += 1 + content->len;
	if (!out)
		return len;
	out->len = 0;
	char num[24];
	snprintf(num, sizeof num, "%06u ", line);
	add_str(out, num);
	uint64_t at = time + *delta < time ? UINT64_MAX : time + *delta;
	sv_buf_add(out, iso_cached(ic, at), 27);
	char kn[10];
	snprintf(kn, sizeof kn, " %-8s", kind_names[*kind]);
	sv_buf_add(out, kn, 9);
	if (*kind == K_BAD) {
		sv_buf_add(out, " ", 1);
		add_str(out, *why);
	} else if (content->len) {
		sv_buf_add(out, " ", 1);
		sv_buf_add(out, content->p, content->len);
	}
	sv_buf_add(out, "\n", 1);
	return len;
}

/* ---- the header ------------------------------------------------------------------ */

static int header_fail(struct sv_err *err, int line, uint64_t off, const char *what)
{
	return sv_err_set(err, -EBADMSG, "nethack: line %d (byte %llu): %s", line,
			  (unsigned long long)off, what);
}

static bool word3(const char *s, size_t n, char out[4])
{
	if (n != 3)
		return false;
	for (size_t i = 0; i < 3; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
	memcpy(out, s, 3);
	out[3] = '\0';
	return true;
}

/* Parses line 1 (exactly LINE1_LEN bytes with its newline). */
int sv_nh_parse_line1(const char *p, char status[5], uint32_t *count, char version[16],
		       struct sv_err *err)
{
	uint64_t v;
	if (memcmp(p, "NHGAME ", 7) || p[11] != ' ' || p[20] != ' ' || p[30] != '\n')
		return header_fail(err, 1, 0, "not \"NHGAME <status> <count> <version>\" "
					      "in 31 bytes");
	if (memcmp(p + 7, "save", 4) && memcmp(p + 7, "done", 4))
		return header_fail(err, 1, 7, "the status is neither \"save\" nor \"done\"");
	if (!sv_nh_parse_hex(p + COUNT_OFF, 8, &v))
		return header_fail(err, 1, COUNT_OFF, "the recovery count is not 8 hex digits");
	for (int i = 21; i < 30; i++)
		if ((uint8_t)p[i] <= 0x20 || (uint8_t)p[i] > 0x7e)
			return header_fail(err, 1, 21, "the version is not 9 printable characters");
	memcpy(status, p + 7, 4);
	status[4] = '\0';
	*count = (uint32_t)v;
	memcpy(version, p + 21, 9);
	version[9] = '\0';
	return 0;
}

void sv_nh_make_header_views(struct nh *nh)
{
	char ts[28];
	iso_time(nh->start, ts);
	const char *sl = nh->statusline;
	while (*sl == ' ')
		sl++;
	nh->thead.len = 0;
	sv_buf_printf(&nh->thead, "%06u %s %-8s %s, recovery count %u, version %s\n", 1, ts,
		      "header", nh->status, nh->recovery, nh->version);
	sv_buf_printf(&nh->thead, "%06u %s %-8s ", 2, ts, "status");
	add_quoted(&nh->thead, (const uint8_t *)sl, strlen(sl));
	sv_buf_printf(&nh->thead, "\n%06u %s %-8s player ", 3, ts, "start");
	add_quoted(&nh->thead, (const uint8_t *)nh->name, nh->namelen);
	sv_buf_printf(&nh->thead, ", %s %s %s %s, mode %s\n", nh->role, nh->race, nh->gender,
		      nh->align, nh->mode < 4 ? mode_names[nh->mode] : "unknown");

	/* The name as JSON text: UTF-8 as it is, other bytes as Latin-1. */
	struct sv_buf nm;
	sv_buf_init(&nm);
	json_t *probe = json_stringn(nh->name, nh->namelen);
	if (probe) {
		sv_buf_add(&nm, nh->name, nh->namelen);
	} else {
		for (size_t i = 0; i < nh->namelen; i++) {
			uint8_t ch = (uint8_t)nh->name[i];
			if (ch < 0x80) {
				sv_buf_add(&nm, &ch, 1);
			} else {
				uint8_t u[2] = {(uint8_t)(0xc0 | ch >> 6), (uint8_t)(0x80 | (ch & 0x3f))};
				sv_buf_add(&nm, u, 2);
			}
		}
	}
	json_decref(probe);
	json_t *o = json_object();
	json_object_set_new(o, "status", json_string(nh->status));
	json_object_set_new(o, "recovery_count", json_integer(nh->recovery));
	json_object_set_new(o, "version", json_string(nh->version));
	json_object_set_new(o, "status_line", json_string(sl));
	json_object_set_new(o, "start_time", json_string(ts));
	json_object_set_new(o, "play_mode", json_string(nh->mode < 4 ? mode_names[nh->mode]
								    : "unknown"));
	json_object_set_new(o, "player_name", json_stringn(nm.len ? (char *)nm.p : "", nm.len));
	json_object_set_new(o, "role", json_string(nh->role));
	json_object_set_new(o, "race", json_string(nh->race));
	json_object_set_new(o, "gender", json_string(nh->gender));
	json_object_set_new(o, "alignment", json_string(nh->align));
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	nh->json.len = 0;
	if (text) {
		sv_buf_add(&nh->json, text, strlen(text));
		sv_buf_add(&nh->json, "\n", 1);
	}
	free(text);
	json_decref(o);
	sv_buf_fini(&nm);
}

ssize_t sv_nh_pread(struct sv_container *c, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	struct sv_err e;
	int rc = sv_container_read(c, off, buf, n, &got, &e);
	if (rc) {
		errno = -rc;
		return -1;
	}
	return (ssize_t)got;
}

/* Reads and checks lines 1-3. */
static int parse_header(struct sv_container *c, struct nh *nh, struct sv_err *err)
{
	char buf[HEAD];
	size_t n = 0;
	struct sv_err rd;
	if (sv_container_read(c, 0, buf, sizeof buf, &n, &rd))
		return sv_err_set(err, -EIO, "nethack: %s", rd.msg);
	if (n < LINE1_LEN)
		return header_fail(err, 1, 0, "the file ends inside the header");
	int rc = sv_nh_parse_line1(buf, nh->status, &nh->recovery, nh->version, err);
	if (rc)
		return rc;
	if (n < LINE1_LEN + LINE2_LEN || buf[LINE1_LEN + LINE2_LEN - 1] != '\n')
		return header_fail(err, 2, LINE1_LEN, n < LINE1_LEN + LINE2_LEN
					      ? "the file ends inside the header"
					      : "the status line is not 78 characters");
	for (size_t i = LINE1_LEN; i < LINE1_LEN + LINE2_LEN - 1; i++)
		if ((uint8_t)buf[i] < 0x20 || (uint8_t)buf[i] > 0x7e)
			return header_fail(err, 2, i, "a control or non-ASCII byte");
	memcpy(nh->statusline, buf + LINE1_LEN, LINE2_LEN - 1);
	nh->statusline[LINE2_LEN - 1] = '\0';

	size_t o3 = LINE1_LEN + LINE2_LEN;
	const char *l3 = buf + o3;
	const char *nl = memchr(l3, '\n', n - o3);
	if (!nl)
		return header_fail(err, 3, o3, n == sizeof buf ? "the line is too long"
							      : "the file ends inside the header");
	/* Eight space-separated fields. */
	const char *f[8];
	size_t fl[8];
	size_t nf = 0;
	for (const char *s = l3; s < nl && nf < 9;) {
		const char *e = memchr(s, ' ', (size_t)(nl - s));
		if (!e)
			e = nl;
		if (nf < 8) {
			f[nf] = s;
			fl[nf] = (size_t)(e - s);
		}
		nf++;
		s = e + (e < nl);
		if (e == nl)
			break;
	}
	uint64_t start;
	long zero, mode;
	if (nf != 8 || nl[-1] == ' ' || !sv_nh_parse_hex(f[0], fl[0], &start))
		return header_fail(err, 3, o3, "not \"<start> 0 <mode> <name> <role> <race> "
					       "<gender> <alignment>\"");
	if (!parse_int(f[1], fl[1], &zero) || zero != 0 || !parse_int(f[2], fl[2], &mode) ||
	    mode < 0 || mode > 3)
		return header_fail(err, 3, (uint64_t)(f[1] - buf),
				   "the play mode is not 0, 1, 2 or 3 after a 0");
	struct sv_buf name;
	sv_buf_init(&name);
	const char *why;
	if (parse_b64_arg(f[3], fl[3], &name, &why)) {
		sv_buf_fini(&name);
		return header_fail(err, 3, (uint64_t)(f[3] - buf), "the player name is not base64");
	}
	if (!word3(f[4], fl[4], nh->role) || !word3(f[5], fl[5], nh->race) ||
	    !word3(f[6], fl[6], nh->gender) || !word3(f[7], fl[7], nh->align)) {
		sv_buf_fini(&name);
		return header_fail(err, 3, (uint64_t)(f[4] - buf),
				   "role, race, gender and alignment are not 3-letter words");
	}
	free(nh->name);
	nh->name = malloc(name.len + 1);
	if (!nh->name) {
		sv_buf_fini(&name);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	if (name.len)
		memcpy(nh->name, name.p, name.len);
	nh->name[name.len] = '\0';
	nh->namelen = name.len;
	sv_buf_fini(&name);
	nh->start = start;
	nh->mode = (unsigned)mode;
	nh->hdr_end = (uint64_t)(nl - buf) + 1;
	sv_nh_make_header_views(nh);
	return 0;
}

/* ---- scanning ------------------------------------------------------------------- */

/*
 * Calls fn for each complete line from `off` until `limit` (or the file's
 * end): its offset and a view of it (up to HEAD bytes, and the whole line
 * when a short kind runs longer).  fn returns non-zero to stop.  *endp
 * receives the offset after the last complete line.
 */

/* As sv_nh_each_line; with `only` (two bytes), a whole line in the block
 * that starts with neither is only counted in *skipped (the open's scan
 * wants backup and diff lines; a 200 MB log has 5 million lines). */
static int each_line(struct sv_container *c, uint64_t off, uint64_t limit, size_t block, const char *only,
		     uint32_t *skipped, line_fn fn, void *arg, uint64_t *endp, struct sv_err *err);

int sv_nh_each_line(struct sv_container *c, uint64_t off, uint64_t limit, size_t block, line_fn fn,
		     void *arg, uint64_t *endp, struct sv_err *err)
{
	return each_line(c, off, limit, block, NULL, NULL, fn, arg, endp, err);
}

static int each_line(struct sv_container *c, uint64_t off, uint64_t limit, size_t block, const char *only,
		     uint32_t *skipped, line_fn fn, void *arg, uint64_t *endp, struct sv_err *err)
{
	uint8_t *blk = malloc(block);
	char *head = malloc(HEAD);
	char *big = NULL;
	int rc = 0;
	if (!blk || !head) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	uint64_t pos = off, start = off, full = 0;
	size_t hn = 0;
	char tail[2] = {0, 0};
	while (pos < limit) {
		size_t want = limit - pos < block ? (size_t)(limit - pos) : block;
		size_t k = 0;
		struct sv_err why;
		if (sv_container_read(c, pos, blk, want, &k, &why)) {
			rc = sv_err_set(err, -EIO, "nethack: %s", why.msg);
			goto out;
		}
		if (k == 0)
			break;
		const uint8_t *p = blk, *e = blk + k;
		struct sv_nl nls;
		sv_nl_start(&nls, p, e);
		while (p < e) {
			const uint8_t *nl = sv_nl_next(&nls);
			if (nl && !full) {
				/* The whole line is in the block: seen where it is,
				 * not copied (most lines). */
				size_t len = (size_t)(nl - p);
				if (only && (!len || (p[0] != (uint8_t)only[0] &&
						      p[0] != (uint8_t)only[1]))) {
					(*skipped)++;
					start += len + 1;
					p = nl + 1;
					continue;
				}
				struct line_view lv = {(const char *)p, len, len,
						       {len >= 2 ? (char)p[len - 2] : 0,
							len ? (char)p[len - 1] : 0}};
				rc = fn(arg, start, &lv);
				if (rc)
					goto done;
				start += len + 1;
				p = nl + 1;
				continue;
			}
			size_t seg = (size_t)((nl ? nl : e) - p);
			if (hn < HEAD) {
				size_t t = seg < HEAD - hn ? seg : HEAD - hn;
				memcpy(head + hn, p, t);
				hn += t;
			}
			if (seg >= 2) {
				tail[0] = (char)p[seg - 2];
				tail[1] = (char)p[seg - 1];
			} else if (seg == 1) {
				tail[0] = tail[1];
				tail[1] = (char)p[0];
			}
			full += seg;
			if (!nl) {
				p = e;
				break;
			}
			struct line_view lv = {head, hn, full, {tail[0], tail[1]}};
			char k0 = hn ? head[0] : 0;
			if (full > hn && full <= MAX_SMALL_LINE && k0 != '*' && k0 != '~' &&
			    k0 != 'B') {
				/* A short kind running long: read it whole. */
				free(big);
				big = malloc((size_t)full);
				if (!big || sv_nh_pread(c, big, (size_t)full, start) != (ssize_t)full) {
					rc = sv_err_set(err, big ? -EIO : -ENOMEM,
							"nethack: cannot read the line at byte %llu",
							(unsigned long long)start);
					goto out;
				}
				lv.p = big;
				lv.n = (size_t)full;
			}
			rc = fn(arg, start, &lv);
			if (rc)
				goto done;
			start += full + 1;
			full = 0;
			hn = 0;
			tail[0] = tail[1] = 0;
			p = nl + 1;
		}
		pos += (uint64_t)k;
	}
done:
	if (rc > 0)
		rc = 0;
	*endp = start;
out:
	free(big);
	free(head);
	free(blk);
	return rc;
}

struct scan {
	struct sv_container *c;
	struct nh *nh;
	struct sv_buf content;
	bool add_nodes;     /* the directories are listed: add their entries */
	int err;
	struct sv_buf *warns; /* the warnings said, each NUL-ended (for the
			       * index), or NULL */
	enum { SCAN_ALL, SCAN_ENTRIES, SCAN_DETAILS } what;
	uint32_t line;      /* lines scanned, the header's included */
	bool half;          /* the second half of a split scan: lines counted
			     * from 0, the entries' warnings kept (struct
			     * ewarn, in `held`) for the merge, which knows
			     * the line numbers and the first half's backups */
	struct sv_buf held;
};

/* A warning of the entries' scan, said at once or held for a merge. */
enum { EW_BAD, EW_HUGE, EW_PTR, EW_NO_BACKUP, EW_FIRST };
struct ewarn {
	uint32_t kind, line;
	uint64_t off, a, b;  /* EW_HUGE: line and payload sizes; EW_PTR: the
			      * backup's number and the previous backup's
			      * offset; EW_FIRST (held only): a second half's
			      * first backup's number */
	const char *why;     /* EW_BAD: a static string */
};

/* A warning found while scanning: said, and kept for the index. */
__attribute__((format(printf, 2, 3)))
static void scan_warn(struct scan *s, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	sv_warn(s->c, "%s", msg);
	if (s->warns && sv_buf_add(s->warns, msg, strlen(msg) + 1))
		s->err = -ENOMEM;
}

static void ent_warn(struct scan *s, struct ewarn w)
{
	if (s->half) {
		/* A diff before the half's first backup: the merge finds
		 * those again from the entries (a half with no backup would
		 * hold one for each of its diffs). */
		if (w.kind == EW_NO_BACKUP)
			return;
		if (sv_buf_add(&s->held, &w, sizeof w))
			s->err = -ENOMEM;
		return;
	}
	switch (w.kind) {
	case EW_BAD:
		scan_warn(s, "nethack: line %u (byte %llu): %s", w.line, (unsigned long long)w.off,
			  w.why);
		break;
	case EW_HUGE:
		scan_warn(s, "nethack: line %u (byte %llu): %llu bytes, a payload of %llu: more "
			  "than savefs takes (1 GB a line, 4 GB a payload)", w.line,
			  (unsigned long long)w.off, (unsigned long long)w.a, (unsigned long long)w.b);
		break;
	case EW_PTR:
		scan_warn(s, "nethack: line %u: the backup's number %08llx is not the previous "
			  "backup's offset %llu", w.line, (unsigned long long)w.a,
			  (unsigned long long)w.b);
		break;
	case EW_NO_BACKUP:
		scan_warn(s, "nethack: line %u: a diff before any backup", w.line);
		break;
	}
}

static void add_ent_nodes(struct sv_container *c, struct nh *nh, size_t i);

/* The entry table and checkpoints as arrays of their own (they pointed
 * into the index record): before they grow.  -ENOMEM. */
static int unkeep(struct nh *nh)
{
	if (!nh->kept)
		return 0;
	struct ent *ents;
	size_t cap;
	struct ck *ck = malloc(nh->nck ? nh->nck * sizeof *ck : 1);
	if (!ck || sv_tab_alloc((void **)&ents, &cap, nh->nents, sizeof *ents)) {
		free(ck);
		return -ENOMEM;
	}
	memcpy(ents, nh->ents, nh->nents * sizeof *ents);
	sv_tab_touch(2 * nh->nents * sizeof *ents);
	memcpy(ck, nh->ck, nh->nck * sizeof *ck);
	nh->ents = ents;
	nh->capents = cap;
	nh->ck = ck;
	sv_blob_unref(nh->kept);
	nh->kept = NULL;
	return 0;
}

/* A line as SCAN_ENTRIES sees it (the entries, counted lines) or
 * SCAN_DETAILS (all but the entries), or both (SCAN_ALL). */
static int scan_line(void *arg, uint64_t off, const struct line_view *l)
{
	struct scan *s = arg;
	struct nh *nh = s->nh;
	bool payload = l->n && (l->p[0] == '*' || l->p[0] == '~');
	bool details = s->what != SCAN_ENTRIES, entries = s->what != SCAN_DETAILS;
	if (nh->kept && unkeep(nh))
		return s->err = -ENOMEM;
	if (details && (s->line - 3) % CK_EVERY == 0) {
		if (sv_grow((void **)&nh->ck, &nh->capck, nh->nck + 1, sizeof *nh->ck))
			return s->err = -ENOMEM;
		nh->ck[nh->nck++] = (struct ck){off, nh->tbody, nh->time, s->line + 1};
	}
	s->line++;
	if (!details && !payload)
		return 0;
	enum kind kind;
	uint64_t delta = 0, size = 0, len = 0;
	const char *why = NULL;
	bool comp;
	if (details)
		len = sv_nh_transcript_line(s->line, nh->time, l, NULL, &s->content, NULL, &kind,
					    &delta, &size, &why);
	else
		kind = payload_line(l, &size, &comp, &why);
	if (details) {
		nh->time += delta;
		if (nh->time < delta)
			nh->time = UINT64_MAX;
		nh->tbody += len;
		nh->kinds[kind]++;
		if (kind == K_GAMEOVER)
			nh->over = true;
	}
	/* A malformed line is said once: a backup or diff by the entries'
	 * scan, another kind by the details'. */
	if (kind == K_BAD && (payload ? entries : details))
		ent_warn(s, (struct ewarn){EW_BAD, s->line, off, 0, 0, why});
	/* A malformed backup or diff still gets its files, which fail with
	 * the reason: the states after it cannot be made. */
	if (!entries || !payload || (kind != K_BACKUP && kind != K_DIFF && kind != K_BAD))
		return 0;
	if (sv_tab_grow((void **)&nh->ents, &nh->capents, nh->nents + 1, sizeof *nh->ents))
		return s->err = -ENOMEM;
	struct ent *e = &nh->ents[nh->nents];
	bool backup = l->p[0] == '*';
	bool huge = l->full > ENT_MAX_LEN || size > UINT32_MAX || off > ENT_MAX_OFF;
	if (huge)
		ent_warn(s, (struct ewarn){EW_HUGE, s->line, off, l->full, size, NULL});
	*e = (struct ent){.off = off & ENT_MAX_OFF,
			  .len = huge ? 0 : l->full < ENT_LEN_FAR ? l->full : ENT_LEN_FAR,
			  .backup = backup, .bad = kind == K_BAD || huge, .line = s->line};
	uint32_t prev = sv_nh_last_backup(nh);
	if (backup && !e->bad) {
		uint64_t ptr = 0;
		if (prev == UINT32_MAX) {
			if (s->half && sv_nh_parse_hex(l->p + 1, 8, &ptr))
				ent_warn(s, (struct ewarn){EW_FIRST, s->line, off, ptr, 0, NULL});
		} else {
			sv_nh_parse_hex(l->p + 1, 8, &ptr);
			if (ptr != nh->ents[prev].off)
				ent_warn(s, (struct ewarn){EW_PTR, s->line, off, ptr,
							   nh->ents[prev].off, NULL});
		}
		if (sv_grow((void **)&nh->bk, &nh->capbk, nh->nbk + 1, sizeof *nh->bk))
			return s->err = -ENOMEM;
		nh->bk[nh->nbk++] = (uint32_t)nh->nents;
	}
	if (!backup && prev == UINT32_MAX && !e->bad)
		ent_warn(s, (struct ewarn){EW_NO_BACKUP, s->line, off, 0, 0, NULL});
	nh->nents++;
	nh->nbackups += backup;
	if (s->add_nodes)
		add_ent_nodes(s->c, nh, nh->nents - 1);
	return 0;
}

static void scan_store(struct sv_container *c, const struct nh *nh, const struct sv_buf *ent_warns,
		       const struct sv_buf *det_warns);

/* A scan ended at `end` (after its last complete line), `line` lines
 * seen: nh's end, line count and torn tail follow. */
static void scan_done(struct sv_container *c, struct nh *nh, uint32_t line, uint64_t end,
		      uint64_t limit)
{
	nh->line = line;
	nh->end = nh->det_end = end;
	/* A scan that stopped where it was told (a first need's scan, up
	 * to the end the open saw) keeps the torn tail the open saw: lines
	 * appended since are new to the follower, not torn. */
	if (end == limit)
		return;
	uint64_t now = sv_container_size_now(c);
	nh->torn = now > end ? now - end : 0;
}

/* Scans the complete lines from nh->end on as s says; nh's end, line
 * count and torn tail follow. */
static int scan_on(struct sv_container *c, struct nh *nh, struct scan *s, uint64_t limit,
		   struct sv_err *err)
{
	uint64_t end = nh->end;
	/* The entries' scan is told of backup and diff lines alone, the
	 * others counted (s->line). */
	int rc = each_line(c, nh->end, limit, BLOCK,
			   s->what == SCAN_ENTRIES ? "*~" : NULL, &s->line, scan_line, s, &end, err);
	sv_buf_fini(&s->content);
	if (!rc && s->err)
		rc = sv_err_set(err, s->err, "out of memory");
	scan_done(c, nh, s->line, end, limit);
	return rc;
}

/* Scans the complete lines from nh->end on (what after the open: its
 * details are found first). */
int sv_nh_scan_from(struct sv_container *c, struct nh *nh, bool add_nodes,
		     struct sv_err *err)
{
	int rc = sv_nh_details(c, nh, err);
	if (rc)
		return rc;
	struct scan s = {c, nh, {0}, add_nodes, 0, NULL, SCAN_ALL, nh->line, false, {0}};
	return scan_on(c, nh, &s, UINT64_MAX, err);
}

/*
 * A big log's entries are scanned by two threads: the second scans the
 * second half, from the first newline after the middle, with entries,
 * line numbers and warnings of its own, which the merge puts after the
 * first half's.  What a line of the second half says about what came
 * before (its backup's number, a diff before any backup) is settled at
 * the merge, so that the result is the one scan's, warnings and their
 * order included.
 */
uint64_t sv_nh_split_at = (uint64_t)32 << 20;

struct half {
	struct sv_container *c;
	uint64_t mid, limit;  /* where it starts and stops */
	struct nh nh;         /* its entries: indexes and lines its own */
	struct scan s;
	uint64_t end;
	int rc;
	struct sv_err err;
};

static void *scan_half(void *arg)
{
	struct half *h = arg;
	h->s = (struct scan){h->c, &h->nh, {0}, false, 0, NULL, SCAN_ENTRIES, 0, true, {0}};
	h->rc = each_line(h->c, h->mid, h->limit, BLOCK, "*~", &h->s.line, scan_line, &h->s,
			  &h->end, &h->err);
	if (!h->rc && h->s.err)
		h->rc = h->s.err;
	return NULL;
}

/* Where the second half starts: after the first newline from the middle
 * on; 0 if none is near (a log of few, long lines is scanned whole). */
static uint64_t split_point(struct sv_container *c, uint64_t from, uint64_t size)
{
	uint8_t win[65536];
	uint64_t mid = from + (size - from) / 2;
	ssize_t k = sv_nh_pread(c, win, sizeof win, mid);
	const uint8_t *nl = k > 0 ? memchr(win, '\n', (size_t)k) : NULL;
	return nl ? mid + (uint64_t)(nl - win) + 1 : 0;
}

/* The second half's entries and warnings after the first's (nh, its
 * scan s, `lines` lines seen), as one scan would have found them.
 * -ENOMEM, with nh as the first half left it. */
static int merge_half(struct nh *nh, struct scan *s, struct half *h)
{
	size_t na = nh->nents, nb = h->nh.nents;
	uint32_t lines = s->line;
	if (sv_tab_grow((void **)&nh->ents, &nh->capents, na + nb, sizeof *nh->ents))
		return -ENOMEM;
	if (sv_grow((void **)&nh->bk, &nh->capbk, nh->nbk + h->nh.nbk, sizeof *nh->bk))
		return -ENOMEM;
	uint32_t last_a = sv_nh_last_backup(nh);
	/* Moved in pieces, the half's pages given back behind each (it is
	 * freed after: both tables whole at once were half again the
	 * entries' memory at the scan's peak). */
	const size_t piece = 65536;
	for (size_t i = 0; i < nb; i += piece) {
		size_t m = nb - i < piece ? nb - i : piece;
		for (size_t j = i; j < i + m; j++) {
			struct ent e = h->nh.ents[j];
			e.line += lines;
			nh->ents[na + j] = e;
		}
		sv_tab_touch(2 * m * sizeof *nh->ents);
		sv_give_back(h->nh.ents, i * sizeof *h->nh.ents, (i + m) * sizeof *h->nh.ents);
	}
	for (size_t i = 0; i < h->nh.nbk; i++)
		nh->bk[nh->nbk++] = h->nh.bk[i] + (uint32_t)na;
	nh->nents = na + nb;
	nh->nbackups += h->nh.nbackups;
	const struct ewarn *w = (const void *)h->s.held.p;
	size_t nw = h->s.held.len / sizeof *w, k = 0;
	/* Its diffs before its first backup are diffs before any backup if
	 * the first half has none either: said in line order with the
	 * warnings held. */
	const struct ent *he = nb ? nh->ents + na : NULL; /* lines moved on by `lines` */
	size_t j = 0, jend = last_a != UINT32_MAX	     ? 0
			     : sv_nh_first_backup(&h->nh) == UINT32_MAX ? nb
									 : sv_nh_first_backup(&h->nh);
	for (;;) {
		while (j < jend && (he[j].backup || he[j].bad))
			j++;
		if (j < jend && (k == nw || he[j].line - lines < w[k].line)) {
			ent_warn(s, (struct ewarn){EW_NO_BACKUP, he[j].line, he[j].off, 0, 0, NULL});
			j++;
			continue;
		}
		if (k == nw)
			break;
		struct ewarn x = w[k++];
		x.line += lines;
		if (x.kind == EW_FIRST) {
			if (last_a == UINT32_MAX || x.a == nh->ents[last_a].off)
				continue;
			x.kind = EW_PTR;
			x.b = nh->ents[last_a].off;
		}
		ent_warn(s, x);
	}
	return s->err;
}

/* The open's scan: the entries, and the lines counted. */
static int scan_entries(struct sv_container *c, struct nh *nh, struct sv_buf *warns,
			uint64_t limit, struct sv_err *err)
{
	struct scan s = {c, nh, {0}, false, 0, warns, SCAN_ENTRIES, nh->line, false, {0}};
	uint64_t size = sv_container_size(c);
	if (size > limit)
		size = limit;
	struct half *h = NULL;
	pthread_t th;
	if (size > nh->end && size - nh->end >= sv_nh_split_at && !nh->kept &&
	    (h = calloc(1, sizeof *h))) {
		h->c = c;
		h->limit = limit;
		h->mid = split_point(c, nh->end, size);
		if (!h->mid || h->mid >= size || pthread_create(&th, NULL, scan_half, h)) {
			free(h);
			h = NULL;
		}
	}
	if (!h)
		return scan_on(c, nh, &s, limit, err);
	/* The first half, here. */
	uint64_t end = nh->end;
	int rc = each_line(c, nh->end, h->mid, BLOCK, "*~", &s.line, scan_line, &s, &end, err);
	if (!rc && s.err)
		rc = sv_err_set(err, s.err, "out of memory");
	pthread_join(th, NULL);
	if (!rc) {
		nh->line = s.line;
		nh->end = end;
		/* The halves meet where the second began (the file did not
		 * change under them): merged; else the rest is scanned here. */
		if (!h->rc && end == h->mid &&
		    (uint64_t)s.line + h->s.line <= UINT32_MAX) {
			rc = merge_half(nh, &s, h);
			if (rc)
				rc = sv_err_set(err, rc, "out of memory");
			else
				scan_done(c, nh, s.line + h->s.line, h->end, limit);
		} else {
			rc = scan_on(c, nh, &s, limit, err);
		}
	}
	sv_tab_free(h->nh.ents);
	free(h->nh.bk);
	sv_buf_fini(&h->s.held);
	free(h);
	return rc;
}

int sv_nh_details(struct sv_container *c, struct nh *nh, struct sv_err *err)
{
	int ready = sv_nh_ready(c, nh, err);
	if (ready)
		return ready;
	if (__atomic_load_n(&nh->detailed, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&nh->det_warns.len, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&nh->det_lock);
	int rc = 0;
	if (nh->detailed) {
		/* Kept: what the scan said, said now, as a scan would. */
		for (size_t at = 0; at < nh->det_warns.len; at += strlen((char *)nh->det_warns.p + at) + 1)
			sv_warn(c, "%s", (char *)nh->det_warns.p + at);
		sv_buf_fini(&nh->det_warns);
	} else {
		struct sv_buf warns;
		sv_buf_init(&warns);
		nh->time = nh->start;
		nh->tbody = 0;
		nh->over = false;
		memset(nh->kinds, 0, sizeof nh->kinds);
		if (!nh->kept)
			free(nh->ck);
		nh->ck = NULL;
		nh->nck = nh->capck = 0;
		struct scan s = {c, nh, {0}, false, 0, &warns, SCAN_DETAILS, 3, false, {0}};
		uint64_t end = nh->hdr_end;
		rc = sv_nh_each_line(c, nh->hdr_end, nh->det_end, BLOCK, scan_line,
				     &s, &end, err);
		sv_buf_fini(&s.content);
		if (!rc && s.err)
			rc = sv_err_set(err, s.err, "out of memory");
		if (!rc && (end != nh->det_end || s.line != nh->line))
			rc = sv_err_set(err, -EIO, "nethack: the log changed while it was read "
					"(line %u, byte %llu)", s.line, (unsigned long long)end);
		if (!rc) {
			/* The whole scan, kept for the next mount of the very
			 * same file. */
			if (nh->end == nh->det_end)
				scan_store(c, nh, &nh->ent_warns, &warns);
			sv_buf_fini(&nh->ent_warns);
			__atomic_store_n(&nh->detailed, true, __ATOMIC_RELEASE);
		}
		sv_buf_fini(&warns);
	}
	pthread_mutex_unlock(&nh->det_lock);
	return rc;
}

/* ---- the scan kept in the persistent index ---------------------------------------- */

/* What the scan of a whole log found, kept between mounts (a 200 MB log
 * scans in about a second, and reads back in a few milliseconds): the
 * counters, then the entry table, the transcript checkpoints, and the
 * warnings the entries' scan and the details' said (each NUL-ended), each
 * as this build lays it out (SCAN_INDEX says which layout; the store keys
 * it by the log's identity). */
#define SCAN_INDEX 6
/* Logs up to this size have their details found at open; a bigger one's
 * entries are scanned at their first need. */
#define DETAILS_AT_ONCE ((uint64_t)8 << 20)
#define SCAN_LATER DETAILS_AT_ONCE
/* The entry table's bytes in the record, padded so that the checkpoints
 * after it are aligned. */
#define ENTS_BYTES(n) (((uint64_t)(n) * sizeof(struct ent) + 7) & ~(uint64_t)7)
struct scan_rec {
	uint64_t hdr_end, end, time, tbody, nents, nck, nwarn_ent, nwarn_det;
	uint32_t line, over;
	uint32_t kinds[16];
};

static void scan_store(struct sv_container *c, const struct nh *nh, const struct sv_buf *ent_warns,
		       const struct sv_buf *det_warns)
{
	struct scan_rec r = {nh->hdr_end, nh->end, nh->time, nh->tbody, nh->nents, nh->nck,
			     ent_warns->len, det_warns->len, nh->line, nh->over, {0}};
	memcpy(r.kinds, nh->kinds, sizeof r.kinds);
	static const uint8_t pad[8];
	struct iovec v[6] = {{&r, sizeof r},
			     {nh->ents, nh->nents * sizeof *nh->ents},
			     {(void *)pad, ENTS_BYTES(nh->nents) - nh->nents * sizeof *nh->ents},
			     {nh->ck, nh->nck * sizeof *nh->ck},
			     {ent_warns->p, ent_warns->len},
			     {det_warns->p, det_warns->len}};
	sv_container_index_storev(c, "scan", SCAN_INDEX, v, 6);
}

/* NUL-ended strings, the last one ended. */
static bool strings_ok(const uint8_t *p, uint64_t n)
{
	return !n || p[n - 1] == '\0';
}

/* The scan as kept: true if the record is whole and agrees with itself
 * and with the log's header (then nh holds it, its details' warnings
 * said when they are first needed, as after a scan), else false (nh as it
 * was: the log is scanned). */
static bool scan_recall(struct sv_container *c, struct nh *nh, const struct sv_blob *kept)
{
	struct scan_rec r;
	if (kept->len < sizeof r)
		return false;
	memcpy(&r, kept->data, sizeof r);
	uint64_t size = sv_container_size(c);
	if (r.hdr_end != nh->hdr_end || r.end > size || r.end < r.hdr_end ||
	    r.nents > UINT32_MAX - 1 || r.nck > r.end || r.nwarn_ent > kept->len ||
	    r.nwarn_det > kept->len ||
	    kept->len != sizeof r + ENTS_BYTES(r.nents) + r.nck * sizeof *nh->ck +
				 r.nwarn_ent + r.nwarn_det)
		return false;
	const uint8_t *p = kept->data + sizeof r;
	const struct ent *ents = (const struct ent *)p;
	p += ENTS_BYTES(r.nents);
	const struct ck *ck = (const struct ck *)p;
	p += r.nck * sizeof *ck;
	const uint8_t *det = p + r.nwarn_ent;
	bool ok = strings_ok(p, r.nwarn_ent) && strings_ok(det, r.nwarn_det) &&
		  !sv_buf_add(&nh->det_warns, det, (size_t)r.nwarn_det);
	uint64_t backups = 0;
	uint32_t *bk = NULL;
	size_t nbk = 0, capbk = 0;
	for (size_t i = 0; ok && i < r.nents; i++) {
		ok = ents[i].off >= r.hdr_end && ents[i].len <= r.end - ents[i].off &&
		     ents[i].line <= r.line;
		backups += ents[i].backup;
		if (ok && ents[i].backup && !ents[i].bad) {
			ok = !sv_grow((void **)&bk, &capbk, nbk + 1, sizeof *bk);
			if (ok)
				bk[nbk++] = (uint32_t)i;
		}
	}
	for (size_t i = 0; ok && i < r.nck; i++)
		ok = ck[i].off <= r.end && ck[i].toff <= r.tbody;
	if (!ok) {
		free(bk);
		sv_buf_fini(&nh->det_warns);
		return false;
	}
	free(nh->bk);
	nh->bk = bk;
	nh->nbk = nbk;
	nh->capbk = capbk;
	/* Read in place from the record, which nh keeps. */
	if (!nh->kept) {
		sv_tab_free(nh->ents);
		free(nh->ck);
	}
	sv_blob_unref(nh->kept);
	nh->kept = sv_blob_ref((struct sv_blob *)kept);
	nh->ents = (struct ent *)(kept->data + sizeof r);
	nh->nents = nh->capents = r.nents;
	nh->nbackups = backups;
	nh->ck = (struct ck *)(kept->data + sizeof r + ENTS_BYTES(r.nents));
	nh->nck = nh->capck = r.nck;
	nh->end = nh->det_end = r.end;
	nh->time = r.time;
	nh->tbody = r.tbody;
	nh->line = r.line;
	nh->over = r.over;
	memcpy(nh->kinds, r.kinds, sizeof nh->kinds);
	nh->torn = size - r.end;
	for (const char *w = (const char *)p; w < (const char *)det; w += strlen(w) + 1)
		sv_warn(c, "%s", w);
	nh->detailed = true;
	return true;
}

/* The open's scan: kept from an earlier mount of the very same file, or
 * the entries found now (the details wait for their first need, and then
 * keep the record). */
static void check_first_pointer(struct sv_container *c, struct nh *nh);

/* The end of the last complete line of [from, size) of fd (from if it has
 * none), read backwards from the end; -EIO. */
static int last_line_end(struct sv_container *c, uint64_t from, uint64_t size, uint64_t *end)
{
	uint8_t win[65536];
	uint64_t hi = size;
	while (hi > from) {
		uint64_t lo = hi - from > sizeof win ? hi - sizeof win : from;
		ssize_t k = sv_nh_pread(c, win, (size_t)(hi - lo), lo);
		if (k != (ssize_t)(hi - lo))
			return -EIO;
		const uint8_t *nl = memrchr(win, '\n', (size_t)k);
		if (nl) {
			*end = lo + (uint64_t)(nl - win) + 1;
			return 0;
		}
		hi = lo;
	}
	*end = from;
	return 0;
}

int sv_nh_ready(struct sv_container *c, struct nh *nh, struct sv_err *err)
{
	if (__atomic_load_n(&nh->scanned, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&nh->scan_lock);
	int rc = 0;
	if (!nh->scanned) {
		rc = scan_entries(c, nh, &nh->ent_warns, nh->scan_to, err);
		if (!rc) {
			check_first_pointer(c, nh);
			__atomic_store_n(&nh->scanned, true, __ATOMIC_RELEASE);
		} else {
			/* Nothing kept of a scan that failed: the next need
			 * starts it again from the header. */
			nh->nents = nh->nbackups = nh->nbk = 0;
			nh->end = nh->det_end = nh->hdr_end;
			nh->line = 3;
			nh->torn = nh->scan_torn;
			sv_buf_fini(&nh->ent_warns);
		}
	}
	pthread_mutex_unlock(&nh->scan_lock);
	return rc;
}

static int scan_all(struct sv_container *c, struct nh *nh, struct sv_err *err)
{
	struct sv_blob *kept = NULL;
	int rc = 0;
	if (!sv_container_index_load(c, "scan", SCAN_INDEX, &kept)) {
		bool ok = scan_recall(c, nh, kept);
		sv_blob_unref(kept);
		if (ok)
			goto scanned;
	}
	uint64_t size = sv_container_size(c);
	if (size > SCAN_LATER) {
		/* Found at the first need: the open knows where the last
		 * complete line ends (the log's size) and what is torn. */
		rc = last_line_end(c, nh->end, size, &nh->scan_to);
		if (rc)
			return sv_err_set(err, rc, "nethack: cannot read the end of the log: %s",
					  strerror(errno));
		nh->torn = nh->scan_torn = size - nh->scan_to;
		return 0;
	}
	rc = scan_entries(c, nh, &nh->ent_warns, UINT64_MAX, err);
	if (rc)
		return rc;
scanned:
	check_first_pointer(c, nh);
	nh->scanned = true;
	return 0;
}

static void check_first_pointer(struct sv_container *c, struct nh *nh)
{
	uint32_t first = sv_nh_first_backup(nh), last = sv_nh_last_backup(nh);
	if (first == UINT32_MAX)
		return;
	struct ent *f = &nh->ents[first];
	char hex[8];
	uint64_t ptr;
	if (sv_nh_pread(c, hex, 8, (uint64_t)f->off + 1) != 8 || !sv_nh_parse_hex(hex, 8, &ptr))
		return;
	uint64_t latest = nh->ents[last].off;
	if (ptr != latest)
		sv_warn(c, "nethack: line %u: the first backup's number %08llx does not point at "
			"the latest backup (line %u, byte %llu): only a hint, not followed",
			f->line, (unsigned long long)ptr, nh->ents[last].line,
			(unsigned long long)latest);
}

/* ---- nodes ---------------------------------------------------------------------- */

uint64_t sv_nh_ent_len(struct sv_container *c, const struct ent *e)
{
	if (e->len < ENT_LEN_FAR)
		return e->len;
	/* Its newline, from where the entry's count stops. */
	char buf[65536];
	for (uint64_t at = e->off + ENT_LEN_FAR; at - e->off <= ENT_MAX_LEN;) {
		ssize_t k = sv_nh_pread(c, buf, sizeof buf, at);
		if (k <= 0)
			return UINT64_MAX;
		const char *nl = memchr(buf, '\n', (size_t)k);
		if (nl)
			return at + (uint64_t)(nl - buf) - e->off;
		at += (uint64_t)k;
	}
	return UINT64_MAX;
}

uint64_t sv_nh_ent_size(struct sv_container *c, const struct ent *e)
{
	char head[32], tail[2];
	uint64_t len = sv_nh_ent_len(c, e);
	size_t n = len < sizeof head ? (size_t)len : sizeof head;
	if (len == UINT64_MAX || len < 2 || sv_nh_pread(c, head, n, e->off) != (ssize_t)n ||
	    sv_nh_pread(c, tail, 2, e->off + len - 2) != 2)
		return 0;
	struct line_view l = {head, n, len, {tail[0], tail[1]}};
	uint64_t size = 0;
	bool comp;
	const char *why;
	return payload_line(&l, &size, &comp, &why) == K_BAD ? 0 : size;
}

/* Adds entry i's file to directory dir (saves/, diffs/ or states/) if it
 * has one there.  SV_NONE if out of memory. */
static uint32_t ent_node(struct sv_container *c, struct nh *nh, uint32_t dir, size_t i)
{
	const struct ent *e = &nh->ents[i];
	char name[32];
	uint32_t bad = e->bad ? SV_N_BAD : 0;
	/* Its size as the line says (the page cache has it: the scan read
	 * it, and so does a read of the file). */
	bool sized = !e->bad && (dir != nh->n_states || e->backup);
	uint64_t size = sized ? sv_nh_ent_size(c, e) : 0;
	if (dir == nh->n_saves && e->backup) {
		snprintf(name, sizeof name, "%06u.sav", e->line);
		return sv_node_add(c, dir, name, SV_N_RO | bad, size, ENT_KEY(T_SAVE, i));
	}
	if (dir == nh->n_diffs && !e->backup) {
		snprintf(name, sizeof name, "%06u.mdiff", e->line);
		return sv_node_add(c, dir, name, SV_N_RO | bad, size, ENT_KEY(T_DIFF, i));
	}
	if (dir == nh->n_states) {
		/* A state other than a backup's is sized by building it. */
		bool lazy = !e->backup || e->bad;
		snprintf(name, sizeof name, "%06u.sav", e->line);
		return sv_node_add(c, dir, name,
				   SV_N_RO | bad | (lazy ? SV_N_LAZYSIZE | SV_N_COSTLYSIZE : 0),
				   lazy ? 0 : size, ENT_KEY(T_STATE, i));
	}
	return 0;
}

/* A new entry's files: the listings of saves/, diffs/ and states/ change
 * (their entries are made when looked up). */
static void add_ent_nodes(struct sv_container *c, struct nh *nh, size_t i)
{
	const struct ent *e = &nh->ents[i];
	sv_node_touch(c, e->backup ? nh->n_saves : nh->n_diffs);
	sv_node_touch(c, nh->n_states);
}

/* Whether entry e has a file in directory dir, and its name. */
static bool ent_name(const struct nh *nh, uint32_t dir, const struct ent *e, char name[32])
{
	if (dir == nh->n_saves && !e->backup)
		return false;
	if (dir == nh->n_diffs && e->backup)
		return false;
	if (dir != nh->n_saves && dir != nh->n_diffs && dir != nh->n_states)
		return false;
	snprintf(name, 32, "%06u.%s", e->line, dir == nh->n_diffs ? "mdiff" : "sav");
	return true;
}

/* saves/, diffs/ and states/ from the entry table, without a node each. */
static int list_nh(struct sv_container *c, uint32_t dir, uint64_t pos, char name[256],
		   bool *is_dir, uint64_t *at)
{
	struct nh *nh = sv_container_priv(c);
	struct sv_err e;
	*is_dir = false;
	if (nh && sv_nh_ready(c, nh, &e))
		return -EIO;
	for (size_t i = pos; nh && i < nh->nents; i++) {
		char n[32];
		if (ent_name(nh, dir, &nh->ents[i], n)) {
			memcpy(name, n, strlen(n) + 1);
			*at = i;
			sv_tab_touch((i - pos + 1) * sizeof *nh->ents);
			return 0;
		}
	}
	if (nh)
		sv_tab_touch((nh->nents - pos) * sizeof *nh->ents);
	return 1;
}

static void count_nh(struct sv_container *c, uint32_t dir, uint64_t *files, uint64_t *dirs)
{
	struct nh *nh = sv_container_priv(c);
	struct sv_err e;
	if (nh && sv_nh_ready(c, nh, &e))
		return;
	if (!nh || dir == nh->n_states) {
		*files += nh ? nh->nents : 0;
		return;
	}
	*files += dir == nh->n_saves ? nh->nbackups : nh->nents - nh->nbackups;
}

/* For sv_lower_bound: entry i is on a line before `line`. */
struct line_below {
	const struct nh *nh;
	unsigned long line;
};

static bool line_below(const void *arg, size_t i)
{
	const struct line_below *q = arg;
	return q->nh->ents[i].line < q->line;
}

/* A name in saves/, diffs/ or states/: its entry by line number. */
static int lookup_nh(struct sv_container *c, uint32_t dir, const char *name, struct sv_err *err)
{
	struct nh *nh = sv_container_priv(c);
	char *end;
	if (!nh || name[0] < '0' || name[0] > '9')
		return -ENOENT;
	unsigned long line = strtoul(name, &end, 10);
	if (*end != '.' || line > UINT32_MAX)
		return -ENOENT;
	int rc = sv_nh_ready(c, nh, err);
	if (rc)
		return rc;
	struct line_below q = {nh, line};
	size_t lo = sv_lower_bound(nh->nents, line_below, &q);
	char want[32];
	if (lo == nh->nents || nh->ents[lo].line != line ||
	    !ent_name(nh, dir, &nh->ents[lo], want) || strcmp(want, name))
		return -ENOENT;
	uint32_t n = ent_node(c, nh, dir, lo);
	if (n == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	sv_node_listed(c, n, lo); /* list_nh's position: the entry's */
	return 0;
}

uint64_t sv_nh_log_size(const struct nh *nh)
{
	return nh->end + nh->partial.len;
}

/* Sets a fixed node's size and marks it changed. */
void sv_nh_touch(struct sv_container *c, uint32_t n, uint64_t size)
{
	struct sv_node *node = sv_node(c, n);
	if (!node)
		return;
	__atomic_store_n(&node->size, size, __ATOMIC_RELAXED);
	sv_node_touch(c, n);
}

void sv_nh_touch_all(struct sv_container *c, struct nh *nh)
{
	sv_nh_touch(c, nh->n_log, sv_nh_log_size(nh));
	sv_nh_touch(c, nh->n_transcript, nh->thead.len + nh->tbody);
}

/* ---- open, close, info ------------------------------------------------------------ */

static int probe_nh(const uint8_t *head, size_t n)
{
	return n >= 7 && !memcmp(head, "NHGAME ", 7);
}

static void free_nh(struct nh *nh)
{
	if (!nh)
		return;
	free(nh->name);
	if (!nh->kept) {
		sv_tab_free(nh->ents);
		free(nh->ck);
	}
	free(nh->bk);
	sv_blob_unref(nh->kept);
	sv_buf_fini(&nh->thead);
	sv_buf_fini(&nh->json);
	sv_buf_fini(&nh->partial);
	for (int j = 0; j < ST_KEPT; j++)
		sv_blob_unref(nh->st[j].blob);
	sv_buf_fini(&nh->ent_warns);
	sv_buf_fini(&nh->det_warns);
	pthread_mutex_destroy(&nh->st_lock);
	pthread_mutex_destroy(&nh->det_lock);
	pthread_mutex_destroy(&nh->scan_lock);
	free(nh);
}

static void close_nh(struct sv_container *c)
{
	free_nh(sv_container_priv(c));
	sv_container_set_priv(c, NULL);
}

void sv_nh_install_signals(void);

static int open_nh(struct sv_container *c, struct sv_err *err)
{
	struct nh *nh = calloc(1, sizeof *nh);
	if (!nh)
		return sv_err_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&nh->st_lock, NULL);
	pthread_mutex_init(&nh->det_lock, NULL);
	pthread_mutex_init(&nh->scan_lock, NULL);
	nh->fail_ent = UINT32_MAX;
	for (int j = 0; j < ST_KEPT; j++)
		nh->st[j].ent = UINT32_MAX;
	sv_container_set_priv(c, nh);
	sv_nh_install_signals();
	int rc = parse_header(c, nh, err);
	if (rc)
		return rc;
	nh->end = nh->hdr_end;
	nh->line = 3;
	nh->time = nh->start;
	rc = scan_all(c, nh, err);
	if (rc)
		return rc;
	/* A small log's details cost little: found now. */
	if (sv_container_size(c) <= DETAILS_AT_ONCE && (rc = sv_nh_details(c, nh, err)))
		return rc;
	if (nh->torn)
		sv_warn(c, "nethack: %llu bytes after the last newline (an unfinished write): "
			"not shown", (unsigned long long)nh->torn);
	/* After a rewind these three change even where their sizes do not. */
	nh->n_log = sv_node_add(c, SV_ROOT, "log", SV_N_STREAM | SV_N_DIRECT | SV_N_DERIVED,
				nh->scanned ? sv_nh_log_size(nh) : nh->scan_to, KEY_LOG);
	nh->n_header = sv_node_add(c, SV_ROOT, "header.json", SV_N_RO | SV_N_DERIVED,
				   nh->json.len, KEY_HEADER);
	/* Its size is known with the details: a listing leaves it out, a
	 * stat waits for them. */
	nh->n_transcript = sv_node_add(c, SV_ROOT, "transcript.txt",
				       SV_N_RO | SV_N_STREAM | SV_N_DERIVED |
					       (nh->detailed ? 0 : SV_N_LAZYSIZE | SV_N_COSTLYSIZE |
									   SV_N_SIZEWAIT),
				       nh->detailed ? nh->thead.len + nh->tbody : 0, KEY_TRANSCRIPT);
	nh->n_saves = sv_node_add(c, SV_ROOT, "saves", SV_N_DIR | SV_N_RO | SV_N_INDEXDIR, 0,
				  KEY_SAVES);
	nh->n_diffs = sv_node_add(c, SV_ROOT, "diffs", SV_N_DIR | SV_N_RO | SV_N_INDEXDIR, 0,
				  KEY_DIFFS);
	nh->n_states = sv_node_add(c, SV_ROOT, "states", SV_N_DIR | SV_N_RO | SV_N_INDEXDIR, 0,
				   KEY_STATES);
	if (nh->n_log == SV_NONE || nh->n_header == SV_NONE || nh->n_transcript == SV_NONE ||
	    nh->n_saves == SV_NONE || nh->n_diffs == SV_NONE || nh->n_states == SV_NONE)
		return sv_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

static void info_nh(struct sv_container *c, void *obj)
{
	struct nh *nh = sv_container_priv(c);
	json_t *o = obj;
	struct sv_err re;
	/* (A scan that fails is said by the details' below.) */
	sv_nh_ready(c, nh, &re);
	json_object_set_new(o, "version", json_string(nh->version));
	json_object_set_new(o, "status", json_string(nh->status));
	json_object_set_new(o, "recovery_count", json_integer(nh->recovery));
	json_object_set_new(o, "lines", json_integer(nh->line));
	struct sv_err e;
	if (sv_nh_details(c, nh, &e)) {
		/* Not known: said, and tried again at the next look. */
		json_object_set_new(o, "kinds", json_string(e.msg));
		json_object_set_new(o, "torn_bytes", json_integer((json_int_t)nh->torn));
		return;
	}
	json_t *k = json_object();
	for (int i = 0; i < K_NKINDS; i++)
		if (nh->kinds[i])
			json_object_set_new(k, kind_names[i], json_integer(nh->kinds[i]));
	json_object_set_new(o, "kinds", k);
	json_object_set_new(o, "torn_bytes", json_integer((json_int_t)nh->torn));
}

static const char *const names_nethack[] = {"*.nhgame", NULL};

const struct sv_format sv_fmt_nethack = {
	.name = "nethack",
	.names = names_nethack,
	.description = "NetHack 4 game log (.nhgame), followed live; diffs 4.3-beta1 to 4.3.0",
	.commit_file = SV_COMMIT_APPEND,
	.probe = probe_nh,
	.open = open_nh,
	.close = close_nh,
	.load = sv_nh_load,
	.info = info_nh,
	.list = list_nh,
	.count = count_nh,
	.lookup = lookup_nh,
	.size = sv_nh_size,
	.read = sv_nh_read,
	.write = sv_nh_write,
	.truncate = sv_nh_truncate,
	.sync = sv_nh_sync,
	.refresh = sv_nh_refresh,
};
