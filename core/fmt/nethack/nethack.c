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
bool sv_nh_parse_int(const char *s, size_t n, long *out)
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
void sv_nh_iso_time(uint64_t t, char out[28])
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
void sv_nh_add_quoted(struct sv_buf *b, const uint8_t *p, size_t n)
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
int sv_nh_parse_b64_arg(const char *s, size_t n, struct sv_buf *out, const char **why)
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
enum kind sv_nh_payload_line(const struct line_view *l, uint64_t *size, bool *comp,
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
		enum kind kind = sv_nh_payload_line(l, size, &comp, why);
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
		    !sv_nh_parse_int(p + 1, (size_t)(comma - p - 1), &x) ||
		    !sv_nh_parse_int(comma + 1, (size_t)(p + n - 1 - comma - 1), &y) || x < 0 || y < 0) {
			*why = "a getpos line is not P! or P<x>,<y><key>";
			return K_BAD;
		}
		sv_buf_printf(out, "%ld,%ld key '%c'", x, y, key);
		return K_GETPOS;
	}
	case 'D':
		if (!sv_nh_parse_int(p + 1, n - 1, &v) || v < -1 || v > 10) {
			*why = "a getdir line is not D<-1..10>";
			return K_BAD;
		}
		add_str(out, v < 0 ? "cancelled" : dir_names[v]);
		return K_GETDIR;
	case 'K': {
		const char *comma = memchr(p + 1, ',', n - 1);
		size_t kl = comma ? (size_t)(comma - p - 1) : n - 1;
		long cnt = 0;
		if (!sv_nh_parse_int(p + 1, kl, &v) ||
		    (comma && (!sv_nh_parse_int(comma + 1, (size_t)(p + n - comma - 1), &cnt) || cnt < 0))) {
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
			    (comma && (!sv_nh_parse_int(comma + 1, (size_t)(p + j - comma - 1), &cnt) ||
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
		if (sv_nh_parse_b64_arg(p + 1, n - 1, &s, why)) {
			sv_buf_fini(&s);
			*why = "a text line is not L<base64>";
			return K_BAD;
		}
		/* A cancel: the byte 0x1b (the engine writes it with its NUL). */
		if ((s.len == 1 || (s.len == 2 && !s.p[1])) && s.p[0] == 0x1b)
			sv_buf_printf(out, "cancelled");
		else
			sv_nh_add_quoted(out, s.p, s.len && !s.p[s.len - 1] ? s.len - 1 : s.len);
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
			if (!sv_nh_parse_int(a + 1, al - 1, &v) || v < -1 || v > 10) {
				*why = "a direction argument is not D<-1..10>";
				return K_BAD;
			}
			add_str(out, "direction ");
			add_str(out, v < 0 ? "none" : dir_names[v]);
			break;
		case 'P': {
			const char *comma = memchr(a + 1, ',', al - 1);
			if (!comma || !sv_nh_parse_int(a + 1, (size_t)(comma - a - 1), &x) ||
			    !sv_nh_parse_int(comma + 1, (size_t)(a + al - comma - 1), &y)) {
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
			if (sv_nh_parse_b64_arg(a + 1, al - 1, &s, why)) {
				sv_buf_fini(&s);
				*why = "a text argument is not T<base64>";
				return K_BAD;
			}
			sv_buf_add(out, "text ", 5);
			sv_nh_add_quoted(out, s.p, s.len && !s.p[s.len - 1] ? s.len - 1 : s.len);
			sv_buf_fini(&s);
			break;
		}
		case 'L':
			if (!sv_nh_parse_int(a + 1, al - 1, &v)) {
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

unsigned sv_nh_digits(uint64_t v)
{
	unsigned n = 1;
	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* The start of a transcript line: "000123 2026-...Z kind    ". */
#define PREFIX_LEN(line) ((sv_nh_digits(line) < 6 ? 6 : sv_nh_digits(line)) + 37)


static const char *iso_cached(struct iso_cache *ic, uint64_t t)
{
	uint64_t sec = t / 1000000;
	if (!ic->valid || ic->sec != sec) {
		sv_nh_iso_time(t, ic->text);
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
	return sv_nh_payload_line(&l, &size, &comp, &why) == K_BAD ? 0 : size;
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
				   SV_N_RO | bad | (lazy ? SV_KIND_DECODED_ON_STAT : 0),
				   lazy ? 0 : size, ENT_KEY(T_STATE, i));
	}
	return 0;
}

/* A new entry's files: the listings of saves/, diffs/ and states/ change
 * (their entries are made when looked up). */
void sv_nh_add_ent_nodes(struct sv_container *c, struct nh *nh, size_t i)
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
	int rc = sv_nh_parse_header(c, nh, err);
	if (rc)
		return rc;
	nh->end = nh->hdr_end;
	nh->line = 3;
	nh->time = nh->start;
	rc = sv_nh_scan_all(c, nh, err);
	if (rc)
		return rc;
	/* A small log's details cost little: found now. */
	if (sv_container_size(c) <= DETAILS_AT_ONCE && (rc = sv_nh_details(c, nh, err)))
		return rc;
	if (nh->torn)
		sv_warn(c, "nethack: %llu bytes after the last newline (an unfinished write): "
			"not shown", (unsigned long long)nh->torn);
	/* After a rewind these three change even where their sizes do not. */
	nh->n_log = sv_node_add(c, SV_ROOT, "log", SV_KIND_LOG | SV_N_DERIVED,
				nh->scanned ? sv_nh_log_size(nh) : nh->scan_to, KEY_LOG);
	nh->n_header = sv_node_add(c, SV_ROOT, "header.json", SV_N_RO | SV_N_DERIVED,
				   nh->json.len, KEY_HEADER);
	/* Its size is known with the details: a listing leaves it out, a
	 * stat waits for them. */
	nh->n_transcript = sv_node_add(c, SV_ROOT, "transcript.txt",
				       SV_N_RO | SV_N_STREAM | SV_N_DERIVED |
					       (nh->detailed ? 0 : SV_KIND_DECODED_ON_STAT |
									   SV_N_SIZE_AWAITED),
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

static const struct sv_format_edits nethack_edits = {
	.commit_file = SV_COMMIT_APPEND,
};

static const struct sv_format_dirs nethack_dirs = {
	.list = list_nh,
	.count = count_nh,
	.lookup = lookup_nh,
};

static const struct sv_format_streams nethack_streams = {
	.size = sv_nh_size,
	.read = sv_nh_read,
};

static const struct sv_format_live nethack_live = {
	.write = sv_nh_write,
	.truncate = sv_nh_truncate,
	.sync = sv_nh_sync,
	.refresh = sv_nh_refresh,
};

const struct sv_format sv_fmt_nethack = {
	.name = "nethack",
	.description = "NetHack 4 game log (.nhgame), followed live; diffs 4.3-beta1 to 4.3.0",
	.names = names_nethack,
	.probe = probe_nh,
	.open = open_nh,
	.close = close_nh,
	.load = sv_nh_load,
	.info = info_nh,
	.edits = &nethack_edits,
	.dirs = &nethack_dirs,
	.streams = &nethack_streams,
	.live = &nethack_live,
};
